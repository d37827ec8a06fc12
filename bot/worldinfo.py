"""Import a SillyTavern World Info export into a world file's lore.

SillyTavern exports ``{"entries": {"0": {...}, "1": {...}}}``; some exports
(character books) hold a list of entries instead. Each entry becomes a
:class:`~bot.worlds.LoreEntry`. What cannot be carried over (disabled or
empty entries, regular-expression keys, entries that fail validation) is
left out and reported, never guessed at.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from bot.cleantext import clean_tree
from bot.errors import UserError
from bot.userfiles import MAX_IMPORT_BYTES, MAX_WORLD_BYTES, UnreadableFile, read_text
from bot.worlds import LoreEntry, World, WorldFileError, format_validation_error, load_world, parse_yaml

log = logging.getLogger(__name__)

DEFAULT_ORDER = 100  # SillyTavern's insertion order for a new entry
NEUTRAL_PRIORITY = 50  # LoreEntry's default, for orders that are all equal
SLUG_LENGTH = 48  # the longest id bot.worlds.Slug allows

_REGEX_KEY = re.compile(r"^/(.+)/([a-z]*)$", re.DOTALL)
# SillyTavern's selectiveLogic: 0 AND ANY (what we do), 1 NOT ALL, 2 NOT ANY, 3 AND ALL.
_NEGATED_LOGIC = {1: "NOT ALL", 2: "NOT ANY"}
_AND_ALL = 3

Note = Callable[[str], None]


@dataclass(frozen=True)
class WorldInfoImport:
    """The entries carried over, and one line per thing that was left out."""

    entries: list[LoreEntry]
    skipped: list[str]


def parse_world_info(data: object, source: str, *, existing_ids: Collection[str] = ()) -> WorldInfoImport:
    """Map a parsed World Info export onto lore entries.

    A malformed export raises :class:`UserError` naming ``source``; a bad
    entry is only skipped, with its reason. Ids come from each entry's
    comment and are made unique, also against ``existing_ids``.
    """
    skipped: list[str] = []
    parsed = [found for label, raw in _raw_entries(data, source) if (found := _parse_entry(label, raw, skipped.append))]
    # Ranked over the entries actually imported, so a skipped one leaves no gap in the priorities.
    priorities = _priorities([order for _, order in parsed])
    taken = set(existing_ids)
    entries: list[LoreEntry] = []
    for (entry, _), priority in zip(parsed, priorities, strict=True):
        entry_id = _unique_id(entry.id, taken)
        taken.add(entry_id)
        # Both are valid by construction: a slug of at most 48 characters, a priority in 0-100.
        entries.append(entry.model_copy(update={"id": entry_id, "priority": priority}))
    return WorldInfoImport(entries, skipped)


def read_world_info(export_path: Path) -> WorldInfoImport:
    """Read and map an export file, for importing into a running game."""
    return parse_world_info(_read_export(export_path), str(export_path))


def import_into_world_file(export_path: Path, world_path: Path) -> WorldInfoImport:
    """Add the entries of a World Info export to the ``lore`` of a world file, changing nothing else in it.

    The entries are written as YAML text after the file's last lore entry, at
    its indentation (or as a new ``lore:`` list at the end), so the author's
    comments, key order and formatting stay as they were. The result must
    read back as the old document plus the new entries, and as a valid world;
    otherwise (say, past the lore limit) :class:`WorldFileError` says why and
    the file is left as it was. Nothing is written when nothing could be
    imported.
    """
    data = _read_export(export_path)
    world = load_world(world_path)
    result = parse_world_info(data, str(export_path), existing_ids={entry.id for entry in world.lore})
    if not result.entries:
        return result
    original = read_text(world_path, MAX_WORLD_BYTES)
    before = parse_yaml(original)
    if not isinstance(before, dict):  # load_world read a mapping: the file was changed since
        raise WorldFileError(world_path, ["(top level): a world file must be a mapping of keys to values"])
    added = [_as_yaml(entry) for entry in result.entries]
    text = _with_lore_appended(original, added)
    document = parse_yaml(text)
    expected = {**before, "lore": [*(before.get("lore") or []), *added]}
    if not isinstance(document, dict) or document != expected:
        raise WorldFileError(world_path, ["(file): the entries could not be added without changing the rest of the "
                                          "file; add them by hand, or import them into a running game"])  # fmt: skip
    try:
        World.model_validate(clean_tree({"id": world.id, **document}))
    except ValidationError as exc:
        problems = format_validation_error(exc)
        suffix = f" (with the {len(result.entries)} imported entries; the file was not changed)"
        raise WorldFileError(world_path, [problem + suffix for problem in problems]) from None
    _replace(world_path, text)
    log.info(
        "Imported %d lore entries from %s into %s (%d skipped)",
        len(result.entries),
        export_path,
        world_path,
        len(result.skipped),
    )
    return result


def _with_lore_appended(text: str, entries: list[dict]) -> str:
    """``text`` (a YAML mapping) with ``entries`` appended to its top-level ``lore`` list as YAML, all else byte for
    byte."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    assert isinstance(root, yaml.MappingNode), "the caller parsed text as a mapping"
    lore = next((value for key, value in root.value if key.value == "lore"), None)
    block = yaml.dump(entries, Dumper=_WorldDumper, sort_keys=False, allow_unicode=True).rstrip("\n")
    if lore is None or not isinstance(lore, yaml.SequenceNode) or lore.flow_style or not lore.value:
        if lore is not None:  # `lore: []` or a flow list: the block list takes its place
            start, end = lore.start_mark.index, lore.end_mark.index
            return text[:start].rstrip(" ") + "\n" + block + text[end:]
        return text.rstrip("\n") + "\n\nlore:\n" + block + "\n"
    first_line = text.splitlines()[lore.value[0].start_mark.line]
    indent = first_line[: first_line.index("-")] if "-" in first_line else ""
    at = lore.value[-1].end_mark.index
    while at > 0 and text[at - 1] == "\n":
        at -= 1
    return text[:at] + "\n" + "\n".join(indent + line if line else line for line in block.split("\n")) + text[at:]


def _raw_entries(data: object, source: str) -> list[tuple[str, object]]:
    if not isinstance(data, Mapping):
        raise UserError(f'{source}: (top level): expected an object with "entries", got {_json_type(data)}')
    if "entries" not in data:
        raise UserError(f"{source}: entries: missing; is this a SillyTavern World Info export?")
    entries = data["entries"]
    if isinstance(entries, Mapping):
        return [(f"entries.{name}", raw) for name, raw in entries.items()]
    if isinstance(entries, list):
        return [(f"entries.{index}", raw) for index, raw in enumerate(entries)]
    raise UserError(f"{source}: entries: expected an object or a list of entries, got {_json_type(entries)}")


def _parse_entry(label: str, raw: object, note: Note) -> tuple[LoreEntry, int] | None:
    """The entry, with a provisional id and priority, and its SillyTavern order; or None, with a note why."""
    if not isinstance(raw, Mapping):
        note(f"{label}: expected an object, got {_json_type(raw)}")
        return None
    if raw.get("disable") is True or raw.get("enabled") is False:
        note(f"{label}: disabled")
        return None
    content = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        note(f"{label}: empty content")
        return None
    content = translate_macros(content, f"{label}.content", note)
    fields = {
        "keys": _keys(raw.get("key", raw.get("keys")), f"{label}.key", note),
        "secondary_keys": _secondary_keys(label, raw, note),
        "always_on": raw.get("constant") is True,
        "content": content,
    }
    if raw.get("vectorized") is True:  # SillyTavern's vector storage: the entry also fires by meaning
        fields["match"] = "both" if fields["keys"] else "meaning"
    title = raw.get("comment") or raw.get("name")
    uid = raw.get("uid", raw.get("id", label.rsplit(".", 1)[-1]))
    base_id = (_slug(title) if isinstance(title, str) else "") or _slug(f"st-{uid}")
    try:
        entry = LoreEntry.model_validate({"id": base_id, **fields})
    except ValidationError as exc:
        for reason in _validation_reasons(label, exc):
            note(reason)
        return None
    return entry, _order(raw)


# SillyTavern's macros: {{user}} is the player's persona, {{char}} the character speaking, which here is the GM.
MACROS = {"user": "the player", "char": "the GM"}
_MACRO = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")


def translate_macros(text: str, label: str, note: Note) -> str:
    """``{{user}}`` and ``{{char}}`` in words this game uses; any other macro (``{{random}}``) taken out, noted."""

    def replace(match: re.Match) -> str:
        name = match.group(1).lower()
        if name in MACROS:
            return MACROS[name]
        note(f"{label}: the macro {match.group(0)} means nothing here; taken out")
        return ""

    return " ".join(_MACRO.sub(replace, text).split(" ")).strip()


def _secondary_keys(label: str, raw: Mapping, note: Note) -> list[str]:
    value = raw.get("keysecondary", raw.get("secondary_keys"))
    if not value:
        return []
    if raw.get("selective") is False:
        note(f"{label}.keysecondary: ignored, the entry is not selective")
        return []
    logic = raw.get("selectiveLogic", 0)
    if logic in _NEGATED_LOGIC:
        # Reading NOT as AND would invert the entry; without its secondary keys it at least fires too often.
        note(f"{label}.selectiveLogic: {_NEGATED_LOGIC[logic]} is not supported; secondary keys left out")
        return []
    if logic == _AND_ALL:
        note(f"{label}.selectiveLogic: AND ALL is not supported; any one secondary key will do")
    return _keys(value, f"{label}.keysecondary", note)


def _keys(value: object, label: str, note: Note) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        note(f"{label}: expected a list of keys, got {_json_type(value)}; left out")
        return []
    keys: list[str] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            note(f"{label}: {item!r} is not text; left out")
            continue
        text = str(item).strip()
        if _REGEX_KEY.match(text):
            note(f'{label}: "{text}" is a regular expression, which is not supported; left out')
            continue
        # Older exports keep several keys in one comma-separated string.
        keys.extend(part.strip() for part in text.split(","))
    return _distinct(key for key in keys if key)


def _distinct(keys: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    result = []
    for key in keys:
        if key.casefold() not in seen:
            seen.add(key.casefold())
            result.append(key)
    return result


def _order(raw: Mapping) -> int:
    value = raw.get("order", raw.get("insertion_order", DEFAULT_ORDER))
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return DEFAULT_ORDER
    return round(value)


def _priorities(orders: list[int]) -> list[int]:
    """SillyTavern's orders as 0-100 priorities: kept when they fit, else ranked onto 0-100.

    A higher order is inserted later, closer to the model's reply, so it is
    the more important entry, as a higher priority is here.
    """
    if all(0 <= order <= 100 for order in orders):
        return list(orders)
    ranks = {order: rank for rank, order in enumerate(sorted(set(orders)))}
    if len(ranks) == 1:
        return [NEUTRAL_PRIORITY] * len(orders)
    return [round(ranks[order] * 100 / (len(ranks) - 1)) for order in orders]


def _slug(text: str) -> str:
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", plain.lower()).strip("-")[:SLUG_LENGTH].rstrip("-")


def _unique_id(base: str, taken: Collection[str]) -> str:
    candidate, number = base, 2
    while candidate in taken:
        suffix = f"-{number}"
        candidate = base[: SLUG_LENGTH - len(suffix)].rstrip("-") + suffix
        number += 1
    return candidate


def _validation_reasons(label: str, error: ValidationError) -> list[str]:
    reasons = []
    for line in format_validation_error(error):
        # A problem with the whole entry has no field path of its own.
        if line.startswith("(top level): "):
            reasons.append(f"{label}: {line.removeprefix('(top level): ')}")
        else:
            reasons.append(f"{label}.{line}")
    return reasons


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _read_export(path: Path) -> object:
    try:
        # Exports saved again by a Windows editor may start with a byte-order mark.
        text = read_text(path, MAX_IMPORT_BYTES, encoding="utf-8-sig")
    except UnreadableFile as exc:
        raise UserError(f"{path}: {exc.reason}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: line {exc.lineno}, column {exc.colno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise UserError(f"{path}: nested too deep to be a lore export.") from None
    except ValueError:  # an integer of more digits than Python converts (4,300)
        raise UserError(f"{path}: holds a number too long to be a lore export's.") from None


def _as_yaml(entry: LoreEntry) -> dict:
    return entry.model_dump(exclude_defaults=True)


class _WorldDumper(yaml.SafeDumper):
    """``yaml.safe_dump``, but text of several lines is written as a ``|`` block an author can read and edit."""


def _represent_text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    # PyYAML falls back to a quoted string by itself when a block cannot hold the text exactly.
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_WorldDumper.add_representer(str, _represent_text)


def _replace(path: Path, text: str) -> None:
    """Write through a temporary file, so a failed write never leaves half a world file."""
    temporary = path.with_name(f".{path.name}.import")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise UserError(f"{path}: cannot be written: {exc}") from None
