"""bench change's chains of values (bot/bench/chains/*.json): the three sets load apart, and a set whose steps
are out of order is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.bench.change_chains import CHAINS_FOLDER, HELD_OUT, SEEN, TUNED, load_chains


def test_the_chain_sets_load_and_a_set_out_of_order_is_refused(tmp_path: Path):
    assert len(TUNED) >= 30 and len(SEEN) >= 10 and len(HELD_OUT) >= 10
    assert not {c.name for c in HELD_OUT} & {c.name for c in TUNED + SEEN}, "a held-out chain is in no other set"
    assert sorted(p.name for p in CHAINS_FOLDER.glob("*.json")) == ["held_out.json", "seen.json", "tuned.json"]
    bad = tmp_path / "bad.json"
    step = {"said": "The key is in the cellar.", "fact": ["item", "key", "location", "in the cellar"]}
    chain = {"name": "key", "latest": ["cellar"], "older": [], "questions": ["Where is the key?"], "filler": []}
    bad.write_text(json.dumps([chain | {"steps": [step | {"at": 0.5}, step | {"at": 0.2}]}]))
    with pytest.raises(ValueError, match="in order"):
        load_chains(bad)
