"""The benchmarks run from a fresh checkout and print their figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_cli import run_bot


def figures(stdout: str) -> dict[str, float]:
    last = stdout.strip().splitlines()[-1]
    return {key: float(value) for key, value in (pair.split("=") for pair in last.split())}


@pytest.mark.llm
def test_bench_context_prints_side_by_side_figures_and_a_name_value_line(tmp_path: Path):
    # Recall by words alone: what this checks is the budget and the reuse beside the baselines, and embedding the
    # scripted words took two thirds of its time (144 s against 42 s for 120 turns); recall by meaning in a long
    # game is tests/memory/test_long_game.py's. The timeout guards against a hang, it is not a speed bound.
    result = run_bot("bench", "context", "--turns", "120", cwd=tmp_path, timeout=900, GM_EMBED_MODEL="none")
    assert "recall by words alone" in result.stdout.splitlines()[0]
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for label in ("this memory", "full history", "sliding window"):
        assert label in out
    numbers = figures(out)
    for key in ("tokens_t10", "tokens_t100", "full_tokens_t100", "prefix_reuse", "window_prefix_reuse", "limit"):
        assert key in numbers, key
    # What the memory is for: the prompt stays within the budget while the full history outgrows it,
    # and more of each prompt is reusable from the cache than with a sliding window.
    assert numbers["tokens_t100"] <= numbers["limit"] < numbers["full_tokens_t100"]
    assert numbers["prefix_reuse"] > numbers["window_prefix_reuse"]


def test_bench_refuses_nonsense_turns(tmp_path: Path):
    result = run_bot("bench", "context", "--turns", "0", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr.strip() == "--turns must be at least 1."


@pytest.mark.llm
def test_bench_locomo_runs_the_memory_beside_bm25_and_ends_with_figures(tmp_path: Path):
    import json

    from bot.bench.locomo import load_locomo
    from tests.bench.test_locomo import TINY

    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(TINY))
    result = run_bot("bench", "locomo", str(data), "--budgets", "60,400", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    numbers = figures(result.stdout)
    assert set(numbers) >= {"recall_60", "recall_400", "bm25_recall_60", "bm25_recall_400", "questions"}
    assert list(numbers)[-1] == "heldout_recall_1000" and 0 <= numbers["heldout_recall_1000"] <= 1
    assert "chosen on the other conversations" in result.stdout
    assert numbers["questions"] == 6
    # With room for every turn of these tiny conversations, the memory's context holds all the evidence.
    assert numbers["recall_400"] == 1.0
    assert "multi-hop" in result.stdout and "single-hop" in result.stdout
    # Where the evidence turns sat: every one counted once a budget, all of them shown where all fit.
    for budget in (60, 400):
        table = result.stdout.split(f"the memory at {budget} tokens")[1]
        every = [int(n) for n in next(line for line in table.splitlines() if line.startswith("all")).split()[1:]]
        assert len(every) == 4, table
        assert sum(every) == sum(len(q.evidence) for c in load_locomo(data) for q in c.questions), table
    assert every[0] == sum(every), "at 400 tokens every evidence turn is shown"


def test_bench_locomo_with_a_missing_file_is_one_line(tmp_path: Path):
    result = run_bot("bench", "locomo", str(tmp_path / "none.json"), cwd=tmp_path)
    assert result.returncode == 1 and result.stderr.strip() == f"No LoCoMo file at {tmp_path / 'none.json'}."
    bad = run_bot("bench", "locomo", str(tmp_path / "none.json"), "--budgets", "a,b", cwd=tmp_path)
    assert bad.stderr.strip().startswith("--budgets takes whole numbers")


@pytest.mark.llm
@pytest.mark.slow
def test_bench_leaks_with_the_leaking_gm_counts_every_draft_and_stops_every_one(tmp_path: Path):
    result = run_bot("bench", "leaks", "--model", "leaky", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    numbers = figures(result.stdout)
    assert set(numbers) >= {"attempts", "leaks_before", "leaks_after", "guard_hits", "regenerated"}
    assert numbers["attempts"] == 22
    # The engine holds the secrets: the requests of the GM out of the story it answers itself; every other spoken
    # attempt leaks in the scripted GM's draft.
    assert 0 < numbers["by_engine"] < 20
    assert numbers["leaks_before"] + numbers["by_engine"] == 20, "every draft of a spoken attempt leaks"
    assert numbers["leaks_after"] == 0
    for kind in ("other player", "ignore instructions", "role-play", "prompt", "command"):
        assert kind in result.stdout
    # The guard by meaning on both worlds' sentences, the held-out world's apart.
    assert numbers["paraphrases"] == 20 and numbers["clean"] == 47
    assert numbers["paraphrases_held_out"] == 12 and numbers["clean_held_out"] == 30
    rates = {"paraphrase_caught", "clean_flagged", "paraphrase_caught_held_out", "clean_flagged_held_out"}
    assert rates <= set(numbers)
    assert "ember-road (held out):" in result.stdout
    # Thresholds set on each world and measured on the other; the shipped rule, measured outside the engine,
    # stops exactly what the engine stopped.
    assert {"heldout_caught_ember", "heldout_flagged_ember", "heldout_caught_hollow", "heldout_flagged_hollow"} <= set(
        numbers
    )
    shipped = re.search(r"the shipped rule: hollow-manor (\d+) of 20 leaks, (\d+) of 47 clean; ember-road (\d+) of 12 "
                        r"leaks, (\d+) of 30 clean", result.stdout)  # fmt: skip
    assert shipped, result.stdout
    assert [int(n) for n in shipped.groups()] == [
        round(numbers["paraphrase_caught"] * 20), round(numbers["clean_flagged"] * 47),
        round(numbers["paraphrase_caught_held_out"] * 12), round(numbers["clean_flagged_held_out"] * 30),
    ]  # fmt: skip


@pytest.mark.llm
@pytest.mark.slow
def test_bench_turns_plays_the_three_runs_with_the_real_model_and_ends_with_figures(tmp_path: Path):
    # One game: each game costs every run its cold read and its background work; two games at once are played
    # by the live run's test below.
    result = run_bot(
        "bench", "turns", "--games", "1", "--turns", "2", cwd=tmp_path, GM_N_CTX="2048", GM_REPLY_TOKENS="24",
        GM_SEED="3", timeout=1800,  # three runs of the real model: a guard against a hang, not a speed bound
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "background on:" in out and "background held to the end:" in out and "words alone:" in out
    assert "recall by meaning with all-MiniLM-L6-v2" in out
    assert "prompt tokens read at" in out, "the machine's speed is measured first"
    rows = [line.split() for line in out.splitlines() if line[:4].strip().isdigit()]
    assert len(rows) == 2 * 3, "every GM turn of the game, in the three runs"
    numbers = figures(out)
    for key in ("first_text_p50", "first_text_p95", "first_text_p95_no_jobs", "jobs_delay_ratio",
                "floor_ratio_p50", "live_reuse", "engine_share", "calls_per_turn"):  # fmt: skip
        assert key in numbers, key
    assert 0 < numbers["first_text_p50"] <= numbers["first_text_p95"]
    # The ratios are of the unrounded times; the printed times are rounded to the millisecond.
    assert numbers["jobs_delay_ratio"] == pytest.approx(
        numbers["first_text_p95"] / numbers["first_text_p95_no_jobs"], abs=0.002
    )
    assert 0 < numbers["live_reuse"] < 1, "a game's second turn reuses its first prompt"
    assert 0 <= numbers["engine_share"] < 1 and numbers["calls_per_turn"] > 0
    assert numbers["meaning_p50_ratio"] == pytest.approx(
        numbers["first_text_p50"] / numbers["first_text_p50_words"], abs=0.002
    )
    assert numbers["meaning_paired_ratio_p50"] > 0, "each turn beside the same turn by words alone"
    assert "facts not extracted, at an action" in out and numbers["facts_lag_max"] >= numbers["facts_lag_p50"] >= 0
    assert 0 <= numbers["summary_waiting_share"] <= 1 and numbers["catch_up_s"] >= 0
    assert numbers["query_ms_p50"] > 0, "each turn's query was embedded"


@pytest.mark.llm
@pytest.mark.slow
def test_bench_turns_without_comparison_plays_the_live_run_alone(tmp_path: Path):
    result = run_bot(
        "bench", "turns", "--games", "2", "--turns", "2", "--no-compare", cwd=tmp_path, GM_N_CTX="2048",
        GM_REPLY_TOKENS="24", GM_SEED="3", timeout=1200,  # a guard against a hang, not a speed bound
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "background on:" in out and "held to the end" not in out and "words alone" not in out
    rows = [line.split() for line in out.splitlines() if line[:4].strip().isdigit()]
    assert len(rows) == 2 * 2, "both games' two turns, played at once in the live run, and no other run"
    assert {row[0] for row in rows} == {"1", "2"}
    numbers = figures(out)
    assert 0 < numbers["first_text_p50"] <= numbers["first_text_p95"] and "jobs_delay_ratio" not in numbers
    assert numbers["catch_up_s"] >= 0 and numbers["facts_lag_max"] >= 0
    # A player's turn while another game's prompt is read ahead, and with the model idle, beside one read's step.
    assert "a player acting while another game's prompt is read ahead" in out
    assert numbers["read_ahead_wait"] >= 0 and numbers["idle_wait"] >= 0 and numbers["read_step"] > 0
    assert numbers["read_ahead_interrupted"] in (0, 1)


def test_bench_turns_refuses_nonsense(tmp_path: Path):
    result = run_bot("bench", "turns", "--games", "0", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr.strip() == "--games and --turns must be at least 1."


@pytest.mark.llm
@pytest.mark.slow
def test_bench_quality_scores_both_runs_and_ends_with_figures(tmp_path: Path):
    result = run_bot(
        "bench", "quality", "--turns", "2", cwd=tmp_path, GM_N_CTX="2048", GM_REPLY_TOKENS="24", GM_SEED="3",
        timeout=1800,  # both worlds twice with the real model: a guard against a hang, not a speed bound
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "rules off (what the model wrote)" in out and "rules on (what players read)" in out
    numbers = figures(out)
    from bot.bench.quality import FAULTS

    for key in (*FAULTS, "json_fallback", "worst_job_fallback", "regenerated", "cut_off_off", "first_person_off"):
        assert 0 <= numbers[key] <= 1, key
    assert numbers["replies"] == 4, "two turns in each of the two worlds"
    assert numbers["clue_delivered"] in (0, 1) and "Private clue (locked-room), rules on" in out
    assert "valid at the first try / after the retry / fell back" in out and "PrivateMemoryAnswer" in out


@pytest.mark.llm
@pytest.mark.slow
def test_bench_length_plays_short_and_long_turns_and_ends_with_figures(tmp_path: Path):
    result = run_bot("bench", "length", "--turns", "20", cwd=tmp_path, GM_N_CTX="2048", GM_REPLY_TOKENS="24")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "GM turns short" in out and "GM turns long" in out
    numbers = figures(out)
    for key in ("reply_words_after_short", "reply_words_after_long"):
        assert 0 < numbers[key] <= 24, key  # a word is a token at least
    ratio = numbers["reply_words_after_short"] / numbers["reply_words_after_long"]
    assert numbers["length_ratio"] == pytest.approx(ratio, rel=0.01)


def test_bench_length_refuses_too_few_turns(tmp_path: Path):
    result = run_bot("bench", "length", "--turns", "5", cwd=tmp_path)
    assert result.returncode == 1 and "--turns must be at least 20" in result.stderr


def test_the_quality_rules_find_each_fault():
    from bot.bench.quality import Turn, score

    action = "I walk up to the front door of the manor and knock."
    turn = Turn(action, "Maya", ["Maya", "Tom"], grounding=frozenset({"manor", "pike"}))
    clean = "Dr. Pike opens the door, a lamp shaking in his hand. Rain blows across the tiles behind him. He frowns."

    def faults(text: str, recent: tuple[str, ...] = (), raw: str | None = None, **changes) -> list[str]:
        return score(text, Turn(**{**turn.__dict__, "recent": recent, **changes}), raw)

    assert faults(clean) == []
    assert faults(clean + "\nTom: I follow her in.") == ["speaks_for_players"]
    assert "echo" in faults("Maya walks up to the front door of the manor and knocks. " + clean)
    assert "echo" in faults("Maya: I walk up to the front door of the manor and knock. " + clean)
    assert "echo" not in faults(
        'Meg Wren: "I keep the key to the study. I always use it."',
        action="I ask Meg Wren who keeps the key to the study.",
    ), "the speaker's label is who talks, not what is said: a character's answer is no echo of the question"
    assert "echo" not in faults(
        'Dr. Anselm Pike: "I last saw Silas Wren alive at twelve o\'clock this afternoon."',
        action="I ask Dr. Pike when he last saw Silas Wren alive.",
    )
    assert faults(clean + " He frowns.") == ["repeats"]
    assert faults(clean, recent=("Rain falls. " + clean,)) == ["repeats"]
    assert faults(clean + " Pike opens the door and") == ["cut_off"]
    assert "ungrounded" in faults("Birds sing in a distant valley, far from any road, under a sky of pale clouds.")
    assert faults("  ") == ["empty"]
    # What a real instruct model did (Qwen2.5 1.5B on Hollow Manor):
    assert faults(clean + " Tom says he will wait outside.") == ["speaks_in_prose"]
    assert faults(clean + " Tom nods and follows.") == ["speaks_in_prose"]
    assert faults(clean + ' "It was the brandy," says Tom.') == ["speaks_in_prose"], "a line given to him"
    assert faults(clean + " You decide to wait in the hall.") == ["speaks_in_prose"], "told to the acting player"
    assert faults(clean, actor="Tom", action="I say hello to the doctor at the manor door.") == []
    assert faults("I step inside and look around. " + clean) == ["first_person"]
    assert faults(clean + ' "I never sleep," he says.') == [], "an NPC speaks in the first person"
    assert faults(clean + " I'll need a d20 roll from you.") == [], "the GM asks for a roll"
    assert "ignores_action" in faults("The cook hums in the kitchen. Pots clatter, steam rises from the copper pans.")
    assert faults(clean, action="I ask the housekeeper about dinner.",
                  referents=frozenset({"hester", "crane"})) == ["ignores_action"]  # fmt: skip
    assert "ignores_action" not in faults(
        "Mrs. Crane folds her hands over her apron and says dinner was at eight, with every guest at the table.",
        action="I ask the housekeeper about dinner.",
        referents=frozenset({"hester", "crane"}),
    )
    assert faults("Pike opens the front door. He waits.") == ["thin"]
    assert faults("[" + clean) == ["artefacts"]
    assert faults(clean + "\nGM: Anything else?") == ["artefacts"]
    assert faults(clean + " [Maya joins the game.]") == ["artefacts"]
    assert faults("{{to Maya: psst.}} " + clean) == ["artefacts"], "doubled braces, copied from an earlier reply"
    assert "engine_notes" in faults(clean + " (GM note: rewrite the reply without any secret. Private things go in .)")
    assert "engine_notes" in faults(clean + " (GM: keep to what the players have found.)")
    assert faults(clean, raw=clean + " [[to Tom: ]]") == ["bad_asides"]
    assert faults(clean, raw=clean + " [[to Rook: the key]]") == ["bad_asides"], "nobody seated is Rook"
    assert faults(clean, raw=clean + " [[to Tom: the key is cold") == ["bad_asides"]
    assert "bad_asides" in faults(clean + " [To Tom: the key is cold.]")
    assert faults(clean, raw=clean + " [[to Tom: The key is cold.]]") == []
    assert faults("(The GM answers privately.)") == ["placeholder"]


async def test_bench_recalls_search_times_cover_every_vector_of_a_game(real_embedder):
    """bench recall's search figures: a game of fragments of one vector and of four, read once, then searched."""
    from bot.bench.recall import PARTS, _search

    (search_p50, search_p95), (query_p50, _), first_read, rows, held = await _search(real_embedder, 300)
    assert rows == 150 * sum(PARTS), "half the fragments one vector (an action), half four (a reply)"
    assert 0 < search_p50 <= search_p95 and query_p50 > 0 and first_read > 0
    assert rows * 384 <= held, "the bytes held in memory: a byte a dimension of each vector, at the least"
