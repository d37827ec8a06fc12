"""``bench quality``: replies scored by checkable rules, each rule finding its fault, and both runs scored."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.test_cli import figures
from tests.test_cli import run_bot


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
