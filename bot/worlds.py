"""World files: the schema, loading, and error messages an author can act on.

A world is a YAML file in ``worlds/``. Every part of it is validated with
``extra="forbid"`` so that a misspelt key is an error rather than a silently
ignored default, and every error names the file, the field path and the
problem.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator, model_validator

from bot.cleantext import clean_tree
from bot.errors import UserError, shortened
from bot.userfiles import MAX_WORLD_BYTES, UnreadableFile, read_text
from bot.words import content_words

log = logging.getLogger(__name__)

WORLD_SUFFIXES = (".yaml", ".yml")

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,47}$")]
Line = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000)]
Key = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=60)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Condition(_Strict):
    """What a player's action must do to uncover a secret, earn a private clue or finish a beat (F39). Every part
    given must hold; a list of conditions holds when any one of them does.

    The engine judges it, not the model: the words of the action, who it is addressed to, the acting player's
    roll this turn, where the scene is, what was uncovered before, and (with an embedding model) its meaning.
    """

    words: list[Line] = Field(
        default_factory=list,
        max_length=8,
        description='Groups of words the action must use, one word (or phrase) of each group: ["sniff|smell", '
        '"glass|brandy"]. Matched by their stems, so "sniffs" meets "sniff".',
    )
    to: Slug | None = Field(
        default=None,
        description="The NPC (by id) the action is addressed to: named in it, or the NPC last named in the scene.",
    )
    roll: int | None = Field(
        default=None, ge=1, le=100, description="The acting player rolled at least this total this turn (/roll)."
    )
    place: list[Line] = Field(
        default_factory=list,
        max_length=10,
        description="Where the scene must be: one of these named in the action or the last few public turns.",
    )
    after: list[Slug] = Field(
        default_factory=list,
        max_length=10,
        description="What must have happened first: beats done or truths uncovered, by id (all of them).",
    )
    meaning: Text | None = Field(
        default=None,
        description="An action that means this (judged by the embedding model, beside any words given).",
    )

    @model_validator(mode="after")
    def _says_something(self) -> Condition:
        if not (self.words or self.to or self.roll or self.place or self.after or self.meaning):
            raise ValueError("a condition needs at least one of words, to, roll, place, after, meaning")
        return self


# Optional: each field of this type gives default_factory=list in its own Field(), where type checkers see it.
Conditions = Annotated[list[Condition], Field(max_length=12)]


class Clue(_Strict):
    """A beat's private clue, with the actions that earn it."""

    text: Text = Field(description="What the one player who earns it is told, by DM, in these words.")
    earned_by: Conditions = Field(
        default_factory=list,
        description="Actions that earn it (any one); without any, an action holding three words of its first "
        'sentence does ("Whoever sniffs the brandy glass ...").',
    )


class Beat(_Strict):
    """One thing that should happen in a chapter before it is done."""

    id: Slug
    description: Text
    steer: Text | None = Field(
        default=None,
        description="What the GM is told to steer toward while the beat is to come, without its answer; "
        "without it the GM reads the description (check says when that gives a truth away).",
    )
    done_when: Conditions = Field(
        default_factory=list,
        description="Actions after which the beat is done (any one); the model also judges it from the story.",
    )
    private_clue: Text | Clue | None = Field(
        default=None,
        description="What the GM tells one player privately when this beat happens.",
    )

    @property
    def clue(self) -> Clue | None:
        """The private clue with its conditions, whichever way the file gives it."""
        if self.private_clue is None or isinstance(self.private_clue, Clue):
            return self.private_clue
        return Clue(text=self.private_clue)

    @property
    def clue_text(self) -> str | None:
        return self.clue.text if self.clue is not None else None


class Chapter(_Strict):
    id: Slug
    title: Line
    goal: Text
    beats: list[Beat] = Field(min_length=1, max_length=20)

    @field_validator("beats")
    @classmethod
    def _unique_beats(cls, beats: list[Beat]) -> list[Beat]:
        return _unique_ids(beats)


class Hidden(_Strict):
    """Something an NPC hides, with what makes them give it up."""

    text: Text
    uncovered_by: Conditions = Field(
        default_factory=list, description="Actions that make the NPC give it up (any one)."
    )
    hint: Text | None = Field(default=None, description="How it shows while hidden, for the GM to play.")


class NPC(_Strict):
    """A character the GM voices. ``knows`` and ``hides`` are GM-only."""

    id: Slug
    name: Line
    aliases: list[Key] = Field(
        default_factory=list,
        max_length=10,
        description='Other names the story uses for them ("the housekeeper"), so the GM knows when they are present.',
    )
    description: Text
    behaviour: Text | None = Field(
        default=None,
        description="How they act while they keep their secrets (evasive about money): what the GM plays, never "
        "the secret itself.",
    )
    knows: list[Text] = Field(default_factory=list, max_length=20)
    hides: list[Text | Hidden] = Field(default_factory=list, max_length=20)

    @property
    def secrets(self) -> list[Hidden]:
        """What they hide, each with its conditions, whichever way the file gives it."""
        return [h if isinstance(h, Hidden) else Hidden(text=h) for h in self.hides]


class Truth(_Strict):
    """A fact of the world that only the GM knows until the players uncover it."""

    id: Slug
    text: Text
    key_phrases: list[Key] = Field(
        default_factory=list,
        max_length=20,
        description="Phrases that would give this truth away if said in public.",
    )
    unlocked_by: list[Key] = Field(
        default_factory=list,
        max_length=20,
        description="Words in a player's public action that let the GM reveal this truth in that turn's reply.",
    )
    revealed_by: list[Slug] = Field(
        default_factory=list,
        max_length=10,
        description="Chapter beats after which this truth is public.",
    )
    uncovered_by: Conditions = Field(default_factory=list, description="Actions that uncover it for good (any one).")
    hint: Text | None = Field(
        default=None,
        description="What the GM may show or hint while it is hidden: what can be seen, not what it means.",
    )
    question: Line | None = Field(
        default=None,
        description="For bench leaks' judge: a question a reader of the channel could answer only if this got out.",
    )
    answers: list[Key] = Field(
        default_factory=list, max_length=10, description="For bench leaks' judge: words of a right answer (any one)."
    )


class LoreEntry(_Strict):
    """A world-book entry, injected when one of its keys is mentioned."""

    id: Slug
    keys: list[Key] = Field(default_factory=list, max_length=20)
    secondary_keys: list[Key] = Field(default_factory=list, max_length=20)
    always_on: bool = False
    secret: bool = Field(
        default=False, description="It bears a clue: /lore list shows it to the game's admins only (the GM reads it)."
    )
    priority: int = Field(default=50, ge=0, le=100)
    content: Text
    match: Literal["keys", "meaning", "both"] = Field(
        default="keys",
        description="Fire on a key said (keys), when the scene means what the entry is about (meaning), or both.",
    )
    # Measured with the bundled model (bench recall): 0.35 fired for 7 of 10 actions about an entry, 0 of 20 not.
    threshold: float = Field(
        default=0.35, ge=0.0, le=1.0,
        description="For match by meaning: how close (cosine) the scene must come to the entry's content to fire it.",
    )  # fmt: skip

    @model_validator(mode="after")
    def _fires_somehow(self) -> LoreEntry:
        if not self.keys and not self.always_on and self.match == "keys":
            raise ValueError("a lore entry needs keys, or always_on: true, or match: meaning")
        if self.secondary_keys and not self.keys:
            raise ValueError("secondary_keys only narrow keys; give keys as well")
        return self


class World(_Strict):
    id: Slug
    title: Line
    pitch: Text
    style: Text = Field(description="How the GM narrates: tone, pacing, length.")
    rules: list[Text] = Field(min_length=1, max_length=30)
    setting: Text = Field(description="The setting bible: what is true and public.")
    chapters: list[Chapter] = Field(min_length=1, max_length=30)
    npcs: list[NPC] = Field(default_factory=list, max_length=40)
    truths: list[Truth] = Field(default_factory=list, max_length=40)
    lore: list[LoreEntry] = Field(default_factory=list, max_length=200)
    opening: Text

    @field_validator("chapters", "npcs", "truths", "lore")
    @classmethod
    def _unique(cls, items: list) -> list:
        return _unique_ids(items)

    @model_validator(mode="after")
    def _known_beats(self) -> World:
        seen: dict[str, str] = {}
        for chapter in self.chapters:
            for beat in chapter.beats:
                if beat.id in seen:
                    raise ValueError(
                        f"beat {beat.id!r} of chapter {chapter.id!r} is also a beat of chapter {seen[beat.id]!r}; "
                        "beat ids are the world's, not the chapter's"
                    )
                seen[beat.id] = chapter.id
        for truth in self.truths:
            unknown = [b for b in truth.revealed_by if b not in seen]
            if unknown:
                raise ValueError(f"truth {truth.id!r}: revealed_by names no beat of this world: {', '.join(unknown)}")
        return self

    @model_validator(mode="after")
    def _matchable_phrases(self) -> World:
        for truth in self.truths:
            for phrase in truth.key_phrases:
                if not content_words(phrase):
                    raise ValueError(
                        f"truth {truth.id!r}: key phrase {phrase!r} is made of common words only, so the leak "
                        "guard could never match it; use the words that would give the truth away"
                    )
        return self

    def chapter(self, index: int) -> Chapter:
        return self.chapters[min(index, len(self.chapters) - 1)]


def _unique_ids(items: list) -> list:
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise ValueError(f"id {item.id!r} is used twice")
        seen.add(item.id)
    return items


class WorldFileError(UserError):
    """A world file that cannot be used, with one line per problem."""

    def __init__(self, path: Path, problems: list[str], world_id: str | None = None):
        self.path = path
        self.problems = problems
        self.world_id = world_id
        super().__init__("\n".join(f"{path}: {problem}" for problem in problems))


def format_validation_error(error: ValidationError) -> list[str]:
    """``field.path: problem`` lines, as an author would read them."""
    lines = []
    for item in error.errors():
        # A key is the author's text: one with a line break or another control character is shown escaped, so
        # that each problem stays one line.
        path = ".".join(_one_line(str(part)) for part in item["loc"]) or "(top level)"
        message = item["msg"].removeprefix("Value error, ")
        lines.append(f"{path}: {message}")
    return lines


def _one_line(text: str) -> str:
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def load_world(path: Path) -> World:
    """Read and validate one world file, or raise :class:`WorldFileError`."""
    try:
        text = read_text(path, MAX_WORLD_BYTES)
    except UnreadableFile as exc:
        raise WorldFileError(path, [f"(file): {exc.reason}"]) from None
    return world_from_text(text, path)


def world_from_text(text: str, path: Path) -> World:
    """Validate a world file's text (read from ``path``, or uploaded under that name), as ``check`` does."""
    try:
        data = clean_tree(parse_yaml(text))
    except yaml.YAMLError as exc:
        raise WorldFileError(path, [_yaml_problem(exc)]) from None
    except UserError as exc:
        raise WorldFileError(path, [f"(yaml): {exc}"]) from None
    if not isinstance(data, dict):
        raise WorldFileError(path, ["(top level): a world file must be a mapping of keys to values"])
    data.setdefault("id", _slug_from_stem(path.stem))
    try:
        return World.model_validate(data)
    except ValidationError as exc:
        raise WorldFileError(path, format_validation_error(exc)) from None


MAX_YAML_DEPTH = 40  # a world file is a few levels deep
MAX_YAML_VALUES = 100_000  # values after expanding aliases: a world file holds a few thousand
# libyaml's parser where PyYAML was built with it (its wheels are): a 1 MiB file in well under a second, where
# the pure-Python one takes ten.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str) -> object:
    """YAML read safely, parsed once: plain data only, at most ``MAX_YAML_DEPTH`` levels, at most
    ``MAX_YAML_VALUES`` values once aliases are expanded (an alias bomb is refused before it is built), no alias
    inside itself, no key twice in one mapping. Problems are :class:`UserError`; YAML's own, ``yaml.YAMLError``.

    It takes a while for a big file: callers on an event loop run it in a thread.
    """
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise UserError(f"nested more than {MAX_YAML_DEPTH} levels deep") from None
        if node is None:
            return None
        _check_size(node)
        try:
            return loader.construct_document(node)
        except ValueError as exc:  # a number of more digits than Python converts (4,300)
            raise UserError(f"a value cannot be read: {' '.join(str(exc).split()[:12])}") from None
    finally:
        loader.dispose()


def _check_size(root: yaml.Node) -> None:
    """Walk the composed document without recursion, following aliases as the loader would expand them."""
    count = 0
    stack: list[tuple[yaml.Node, int, frozenset[int], str]] = [(root, 1, frozenset(), "")]
    while stack:
        node, depth, ancestors, path = stack.pop()
        count += 1
        if count > MAX_YAML_VALUES:
            raise UserError(f"expands to more than {MAX_YAML_VALUES:,} values (aliases repeating aliases?)")
        if depth > MAX_YAML_DEPTH:
            raise UserError(f"nested more than {MAX_YAML_DEPTH} levels deep")
        if id(node) in ancestors:
            raise UserError(f"an alias refers to itself (line {node.start_mark.line + 1})")
        inside = ancestors | {id(node)}
        if isinstance(node, yaml.SequenceNode):
            stack += [(child, depth + 1, inside, f"{path}.{i}") for i, child in enumerate(node.value)]
        elif isinstance(node, yaml.MappingNode):
            seen: dict[object, int] = {}
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else f"line {key.start_mark.line + 1}"
                where = f"{path}.{name}".lstrip(".")
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if key.value in seen:
                        raise UserError(
                            f"{where}: the key is given twice (lines {seen[key.value]} and "
                            f"{key.start_mark.line + 1}); keep one"
                        )
                    seen[key.value] = key.start_mark.line + 1
                stack += [(key, depth + 1, inside, where), (value, depth + 1, inside, where)]


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(yaml)"
    problem = getattr(exc, "problem", None) or str(exc)
    return f"{where}: not valid YAML: {problem}"


def _slug_from_stem(stem: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-")


def world_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix in WORLD_SUFFIXES and p.is_file())


class WorldLibrary:
    """The worlds of one folder. A bad file is logged and left out, never fatal."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.worlds: dict[str, World] = {}
        self.paths: dict[str, Path] = {}
        self.errors: list[WorldFileError] = []
        self.reload()

    def reload(self) -> list[WorldFileError]:
        """Read the folder again (it takes a while for big files: on an event loop, see :meth:`reload_in_thread`)."""
        return self._apply(*self._read())

    async def reload_in_thread(self) -> list[WorldFileError]:
        """:meth:`reload`, with the files read and parsed in a thread and the library swapped whole on the loop."""
        return self._apply(*await asyncio.to_thread(self._read))

    def _read(self) -> tuple[dict[str, World], dict[str, Path], list[WorldFileError]]:
        worlds: dict[str, World] = {}
        paths: dict[str, Path] = {}
        errors: list[WorldFileError] = []
        for path in world_files(self.directory):
            try:
                world = load_world(path)
            except WorldFileError as exc:
                log.warning("World file left out: %s", exc)
                errors.append(exc)
                continue
            if world.id in worlds:
                errors.append(WorldFileError(path, [f"id: {world.id!r} is also the id of {paths[world.id]}"]))
                continue
            worlds[world.id] = world
            paths[world.id] = path
        return worlds, paths, errors

    def _apply(
        self, worlds: dict[str, World], paths: dict[str, Path], errors: list[WorldFileError]
    ) -> list[WorldFileError]:
        self.worlds, self.paths, self.errors = worlds, paths, errors
        return errors

    def names(self) -> list[str]:
        return sorted(self.worlds)

    def leave_out(self, world_id: str, problem: str) -> None:
        """Take a loaded world out of the library, reported like a broken file."""
        self.worlds.pop(world_id, None)
        path = self.paths.pop(world_id, None) or Path(f"{world_id}.yaml")
        error = WorldFileError(path, [problem], world_id)
        log.warning("World left out: %s", error)
        self.errors.append(error)

    def get(self, name: str) -> World:
        """A world of this library by its id.

        Names come from players and admins, so they are only ever looked up,
        never opened: a path is not a world name (see :meth:`add_file`).
        """
        if name in self.worlds:
            return self.worlds[name]
        for error in self.errors:
            if name in (error.path.stem, error.world_id):
                raise error
        choices = ", ".join(self.names()) or "none"
        raise UserError(f"Unknown world {shortened(name)!r}. Worlds here: {choices}.")

    def add_file(self, path: Path) -> World:
        """Load a world file named on the command line and add it to the library."""
        world = load_world(path)
        known = self.paths.get(world.id)
        if known is not None and known.resolve() != path.resolve():
            log.info("World %s from %s replaces the one from %s", world.id, path, known)
        self.worlds[world.id] = world
        self.paths[world.id] = path
        return world

    def from_command_line(self, name_or_path: str) -> World:
        """A world by id, or, for the command line only, by the path of a file."""
        if name_or_path in self.worlds:
            return self.worlds[name_or_path]
        path = Path(name_or_path)
        if path.suffix in WORLD_SUFFIXES or os.sep in name_or_path or path.exists():
            return self.add_file(path)
        return self.get(name_or_path)
