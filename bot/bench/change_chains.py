"""The tuned chains of ``bench change`` (see bot.bench.change): one thing each, whose value the GM changes at
given turns of a long game, with the questions a player asks of it at the end and filler that changes nothing.
These are the chains the change finder's sentences and the reply rules were set against; the held-out ones are in
bot.bench.change_held_out.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    at: float  # when in the game, as a share of its length
    said: str  # what the GM says
    fact: tuple[str, str, str, str]  # (kind, subject, attribute, value): what a perfect facts job records


@dataclass(frozen=True)
class Chain:
    name: str
    steps: tuple[Step, ...]
    latest: tuple[str, ...]  # words of the value that holds at the end (any one)
    older: tuple[str, ...]  # words of values it held before and holds no more
    questions: tuple[str, ...]  # in the chain's words, then in others
    filler: tuple[str, ...]  # turns on the same subject that change nothing


def fact(subject: str, attribute: str, value: str, kind: str = "item") -> tuple[str, str, str, str]:
    return (kind, subject, attribute, value)


TUNED: tuple[Chain, ...] = (
    Chain(
        "candlestick moved four times",
        (
            Step(0.04, "Ines sets the swan candlestick on the chapel altar.",
                 fact("swan candlestick", "location", "on the chapel altar")),
            Step(0.23, "Pip carries the swan candlestick into the vestry.",
                 fact("swan candlestick", "location", "in the vestry")),
            Step(0.47, "Mrs Ashdown takes the swan candlestick up to the bell tower.",
                 fact("swan candlestick", "location", "in the bell tower")),
            Step(0.77, "Wren drops the swan candlestick into the old well.",
                 fact("swan candlestick", "location", "in the old well")),
        ),
        ("well",), ("altar", "vestry", "bell tower"),
        ("Where is the swan candlestick now?", "Where did the silver candle holder end up?",
         "What stands on the chapel altar these days?"),
        ("The swan candlestick gleams in the lamplight.", "Someone polishes the swan candlestick's base."),
    ),
    Chain(
        "a side switched and switched back",
        (
            Step(0.08, "The ferryman works for Ashby, everyone says.",
                 fact("ferryman", "allegiance", "Ashby", "character")),
            Step(0.37, "The ferryman now works for the Crown.",
                 fact("ferryman", "allegiance", "the Crown", "character")),
            Step(0.87, "The ferryman is back with Ashby.", fact("ferryman", "allegiance", "Ashby", "character")),
        ),
        ("Ashby",), ("Crown",),
        ("Who does the ferryman work for now?", "Whose side is the boatman on these days?"),
        ("The ferryman spits into the grey water.", "The ferryman counts his coins twice."),
    ),
    Chain(
        "a code changed once",
        (
            Step(0.15, "The cellar door code is 419.", fact("cellar door code", "code", "419")),
            Step(0.63, "Mrs Ashdown changes the cellar door code to 882.", fact("cellar door code", "code", "882")),
        ),
        ("882",), ("419",),
        ("What is the cellar door code?", "What number opens the wine vault's lock now?"),
        ("The cellar door's keypad is stiff with salt.", "Nobody goes near the cellar door after dark."),
    ),
    Chain(
        "a thing that stops existing",
        (
            Step(0.06, "The captain's letter lies in the desk drawer.",
                 fact("captain's letter", "location", "in the desk drawer")),
            Step(0.67, "Wren burns the captain's letter in the kitchen stove.",
                 fact("captain's letter", "state", "burned")),
        ),
        ("burn", "burned", "burnt", "ashes"), ("drawer",),
        ("Where is the captain's letter?", "What became of the skipper's correspondence?"),
        ("The captain mutters about the letter.", "The desk in the study creaks when leaned on."),
    ),
    Chain(
        "a thing handed on three times",
        (
            Step(0.1, "Maya hands the storm lantern to Pip.", fact("storm lantern", "holder", "Pip")),
            Step(0.4, "Pip gives the storm lantern to Mrs Ashdown.", fact("storm lantern", "holder", "Mrs Ashdown")),
            Step(0.73, "Mrs Ashdown hands the storm lantern to Wren.", fact("storm lantern", "holder", "Wren")),
        ),
        ("Wren",), ("Pip", "Ashdown"),
        ("Who has the storm lantern now?", "Whose hands is the hurricane lamp in?"),
        ("The storm lantern hisses as its wick burns.", "The storm lantern's glass is sooty."),
    ),
    Chain(
        "a key moved three times",
        (
            Step(0.05, "Tom hides the brass key under the mat.", fact("brass key", "location", "under the mat")),
            Step(0.33, "The brass key now rests in the chapel bell.",
                 fact("brass key", "location", "in the chapel bell")),
            Step(0.8, "Wren tucks the brass key inside his boot.",
                 fact("brass key", "location", "inside Wren's boot")),
        ),
        ("boot",), ("mat", "bell"),
        ("Where is the brass key now?", "Where's the little metal key kept these days?"),
        ("The brass key is cold to the touch.", "Nobody has used the brass key in years."),
    ),
    Chain(
        "a side switched once",
        (
            Step(0.12, "Tally serves the excise men.", fact("Tally", "allegiance", "the excise men", "character")),
            Step(0.57, "Tally has gone over to the smugglers.",
                 fact("Tally", "allegiance", "the smugglers", "character")),
        ),
        ("smuggler", "smugglers"), ("excise",),
        ("Which side is Tally on?", "Who does Tally answer to now?"),
        ("Tally whistles a shanty on the jetty.", "Tally's boots are always wet."),
    ),
    Chain(
        "a code changed twice",
        (
            Step(0.09, "The combination of the strongbox is 7-3-1.", fact("strongbox combination", "code", "7-3-1")),
            Step(0.43, "The strongbox combination was changed to 2-9-4.",
                 fact("strongbox combination", "code", "2-9-4")),
            Step(0.83, "The strongbox combination is now 5-5-0.", fact("strongbox combination", "code", "5-5-0")),
        ),
        ("5-5-0",), ("7-3-1", "2-9-4"),
        ("What is the strongbox combination?", "Which numbers open the iron chest?"),
        ("The strongbox sits heavy in the corner.", "The strongbox's hinges are rusted."),
    ),
    Chain(
        "a thing used up",
        (
            Step(0.14, "The last oil barrel stands in the lamp room.",
                 fact("last oil barrel", "location", "in the lamp room")),
            Step(0.6, "The last oil barrel is used up.", fact("last oil barrel", "state", "used up")),
        ),
        ("used up", "empty"), ("lamp room",),
        ("Where is the last oil barrel?", "Is there any lamp fuel left in the barrel?"),
        ("The oil barrel smells of whale fat.", "Someone taps the oil barrel to hear it ring."),
    ),
    Chain(
        "a thing moved and brought back",
        (
            Step(0.07, "Pip carries the red signal flag to the boathouse.",
                 fact("red signal flag", "location", "in the boathouse")),
            Step(0.3, "The red signal flag now hangs on the cottage door.",
                 fact("red signal flag", "location", "on the cottage door")),
            Step(0.53, "Wren throws the red signal flag into the sea.",
                 fact("red signal flag", "location", "in the sea")),
            Step(0.9, "Mrs Ashdown puts the red signal flag back in the boathouse.",
                 fact("red signal flag", "location", "in the boathouse")),
        ),
        ("boathouse",), ("cottage door", "sea"),
        ("Where is the red signal flag?", "Where has the scarlet banner got to?"),
        ("The red signal flag snaps in the wind.", "Someone has mended a tear in the red signal flag."),
    ),
    Chain(
        "a chart lent and given back",
        (
            Step(0.11, "Nell keeps the tide chart folded in her apron.", fact("tide chart", "holder", "Nell")),
            Step(0.46, "Nell lends the tide chart to the harbourmaster.",
                 fact("tide chart", "holder", "the harbourmaster")),
            Step(0.81, "The harbourmaster gives the tide chart back to Nell.", fact("tide chart", "holder", "Nell")),
        ),
        ("Nell",), ("harbourmaster",),
        ("Who has the tide chart now?", "Whose keeping is the map of the currents in?"),
        ("The tide chart is stained with candle wax.", "Someone has pencilled notes on the tide chart."),
    ),
    Chain(
        "a compass moved twice",
        (
            Step(0.16, "The whalebone compass sits on the mantelpiece.",
                 fact("whalebone compass", "location", "on the mantelpiece")),
            Step(0.5, "Tom slips the whalebone compass into his oilskin locker.",
                 fact("whalebone compass", "location", "in Tom's oilskin locker")),
            Step(0.88, "Pip buries the whalebone compass in the dunes.",
                 fact("whalebone compass", "location", "buried in the dunes")),
        ),
        ("dunes",), ("mantelpiece", "locker"),
        ("Where is the whalebone compass?", "Where would I find the carved bone needle that points north?"),
        ("The whalebone compass needle trembles.", "A whale is carved on the whalebone compass."),
    ),
    Chain(
        "a password changed twice",
        (
            Step(0.13, "The wreckers' password is gannet.", fact("wreckers' password", "code", "gannet")),
            Step(0.48, "The wreckers change their password to cormorant.",
                 fact("wreckers' password", "code", "cormorant")),
            Step(0.78, "From tonight the wreckers' password is puffin.", fact("wreckers' password", "code", "puffin")),
        ),
        ("puffin",), ("gannet", "cormorant"),
        ("What is the wreckers' password?", "Which word gets you past the wreckers' door these nights?"),
        ("The wreckers keep their door barred.", "A wrecker whistles at the door before knocking."),
    ),
    Chain(
        "a boat wrecked",
        (
            Step(0.2, "The rowing boat is drawn up on the slipway.",
                 fact("rowing boat", "location", "on the slipway")),
            Step(0.7, "The storm smashes the rowing boat to splinters on the rocks.",
                 fact("rowing boat", "state", "smashed to splinters")),
        ),
        ("smashed", "splinters", "wrecked", "destroyed", "broken"), ("slipway",),
        ("Where is the rowing boat?", "Can we take the little skiff out to the rock?"),
        ("The rowing boat's paint is peeling.", "Someone has left a bailing tin in the rowing boat."),
    ),
    Chain(
        "a keeper replaced",
        (
            Step(0.18, "Old Morwen keeps the light at night.", fact("light", "keeper", "Morwen")),
            Step(0.55, "Morwen is too ill to climb the stairs, so Jory keeps the light now.",
                 fact("light", "keeper", "Jory")),
        ),
        ("Jory",), ("Morwen",),
        ("Who keeps the light at night?", "Who tends the great lamp up the tower after dark?"),
        ("The light turns slowly over the black water.", "The great light's brass is polished every evening."),
    ),
    Chain(
        "a telescope that changes owners",
        (
            Step(0.12, "The brass telescope belongs to Captain Hale.",
                 fact("brass telescope", "holder", "Captain Hale")),
            Step(0.52, "Hale trades the brass telescope to a tinker for a jug of rum.",
                 fact("brass telescope", "holder", "a tinker")),
            Step(0.85, "The tinker loses the brass telescope at cards to Orla.",
                 fact("brass telescope", "holder", "Orla")),
        ),
        ("Orla",), ("Hale", "tinker"),
        ("Who owns the brass telescope now?", "Whose is the spyglass these days?"),
        ("The brass telescope's lens is scratched.", "Someone has engraved a star on the brass telescope."),
    ),
    Chain(
        "a locket moved twice",
        (
            Step(0.09, "The silver locket hangs on a nail above the stove.",
                 fact("silver locket", "location", "on a nail above the stove")),
            Step(0.41, "Bram wraps the silver locket in a rag and stuffs it behind the loose brick.",
                 fact("silver locket", "location", "behind the loose brick")),
            Step(0.74, "Someone has moved the silver locket to the chapel windowsill.",
                 fact("silver locket", "location", "on the chapel windowsill")),
        ),
        ("windowsill",), ("nail", "brick"),
        ("Where is the silver locket now?", "Where did the little silver pendant go?"),
        ("The silver locket is tarnished at the clasp.", "The silver locket holds a curl of red hair."),
    ),
    Chain(
        "a master changed",
        (
            Step(0.15, "The innkeeper takes his orders from the magistrate.",
                 fact("innkeeper", "allegiance", "the magistrate", "character")),
            Step(0.6, "The innkeeper now takes his orders from the Black Gull gang.",
                 fact("innkeeper", "allegiance", "the Black Gull gang", "character")),
        ),
        ("Gull",), ("magistrate",),
        ("Who does the innkeeper take orders from now?", "Which master does the man who keeps the tavern obey?"),
        ("The innkeeper wipes the same mug over and over.", "The innkeeper's apron is stained with ale."),
    ),
    Chain(
        "a loaf eaten",
        (
            Step(0.25, "The last loaf of bread sits in the pantry.",
                 fact("last loaf of bread", "location", "in the pantry")),
            Step(0.66, "The children eat the last loaf of bread.", fact("last loaf of bread", "state", "eaten")),
        ),
        ("eaten", "gone", "ate"), ("pantry",),
        ("Where is the last loaf of bread?", "Is there anything left to eat in the larder?"),
        ("The last loaf of bread smells of caraway.", "Someone has cut a heel off the last loaf of bread."),
    ),
    Chain(
        "a signal changed",
        (
            Step(0.2, "The signal for danger is three long flashes.",
                 fact("danger signal", "code", "three long flashes")),
            Step(0.7, "The signal for danger is changed to two short flashes.",
                 fact("danger signal", "code", "two short flashes")),
        ),
        ("two short",), ("three long",),
        ("What is the danger signal?", "How does the lighthouse warn of danger now?"),
        ("The signal lamp is trimmed and ready.", "Nobody has given the danger signal in years."),
    ),
    Chain(
        "silver chalice goes to the cave and comes back",
        (
            Step(0.1, "Father Anselm locks the silver chalice inside the oak press in the chapel vestry after "
                 "evensong.",
                 fact("silver chalice", "location", "chapel vestry")),
            Step(0.38, "Under cover of fog, two of Jory's lads carry the silver chalice down the cliff path and "
                 "wedge it behind a rock shelf in the sea cave at Pengarrow Cove.",
                 fact("silver chalice", "location", "sea cave at Pengarrow Cove")),
            Step(0.71, "By dawn the silver chalice stands once more in the chapel vestry, freshly polished, as "
                 "though it had never left.",
                 fact("silver chalice", "location", "chapel vestry")),
        ),
        ("vestry",), ("cave", "pengarrow"),
        (
            "Where is the silver chalice now?",
            "Where would I find the church's communion cup at present?",
        ),
        (
            "Candlelight glints off the engraved rim of the silver chalice during the hymn.",
            "Mrs Hocking mutters that the silver chalice was a gift from some drowned admiral.",
        ),
    ),
    Chain(
        "smuggling ledger passes from hand to hand",
        (
            Step(0.08, "Silas Tregear, the cooper, keeps the smuggling ledger tucked beneath his leather apron at "
                 "all hours.",
                 fact("smuggling ledger", "holder", "Silas Tregear the cooper")),
            Step(0.42, "Fearing a search, Silas presses the smuggling ledger into the hands of Widow Annis Polmear,"
                 " who sews it into her mattress.",
                 fact("smuggling ledger", "holder", "Widow Annis Polmear")),
            Step(0.8, "Having turned the cottage upside down, Lieutenant Crake of the Revenue pockets the "
                 "smuggling ledger with a thin smile.",
                 fact("smuggling ledger", "holder", "Lieutenant Crake of the Revenue")),
        ),
        ("crake",), ("tregear", "polmear"),
        (
            "Who holds the smuggling ledger now?",
            "Who has the book of contraband accounts in hand these days?",
        ),
        (
            "Nobody dares speak of the smuggling ledger aloud in the taproom.",
            "Half the village would hang if the smuggling ledger were ever read out in court.",
        ),
    ),
    Chain(
        "mermaid figurehead burnt on the bonfire",
        (
            Step(0.15, "The carved mermaid figurehead leans against the rear wall of the boathouse, her blue paint "
                 "flaking in the damp.",
                 fact("carved mermaid figurehead", "location", "boathouse")),
            Step(0.63, "Flames swallow the carved mermaid figurehead when the Midsummer bonfire on Beacon Hill is "
                 "lit, and by midnight nothing of her remains but glowing ashes.",
                 fact("carved mermaid figurehead", "state", "burnt to ashes on the bonfire")),
        ),
        ("burnt", "burned", "ashes", "bonfire", "destroyed"), ("boathouse",),
        (
            "What became of the carved mermaid figurehead?",
            "Where is that wooden sea-maiden from the old ship's prow now?",
        ),
        (
            "Old sailors swear the carved mermaid figurehead came off a Spanish brig wrecked in the great gale.",
            "The fishwives still gossip about who first found the carved mermaid figurehead.",
        ),
    ),
    Chain(
        "inn back-room countersign",
        (
            Step(0.12, "At the Drowned Man, the back-room countersign is 'Blackthorn', and Meg behind the bar will "
                 "open the door for no other word.",
                 fact("back-room countersign", "code", "Blackthorn")),
            Step(0.47, "Word passes from mouth to mouth along the quay: from tonight the back-room countersign "
                 "becomes 'Cormorant'.",
                 fact("back-room countersign", "code", "Cormorant")),
            Step(0.84, "Meg leans over the tap and breathes a fresh back-room countersign into Jory's ear, "
                 "'Juniper', since the last one has been sold to the excisemen.",
                 fact("back-room countersign", "code", "Juniper")),
        ),
        ("juniper",), ("blackthorn", "cormorant"),
        (
            "What is the back-room countersign now?",
            "Which word gets me past the door into the inn's private parlour tonight?",
        ),
        (
            "Meg is strict about the back-room countersign and once turned away the vicar himself.",
            "A drunk fisherman bawls that the back-room countersign is childish nonsense, but nobody answers him.",
        ),
    ),
    Chain(
        "curate Elias Wren changes sides",
        (
            Step(0.06, "Curate Elias Wren blesses the smugglers' boats each new moon and hides their brandy beneath"
                 " the chapel pews.",
                 fact("Elias Wren", "allegiance", "the smugglers", "character")),
            Step(0.3, "Threatened with the gallows, Elias Wren turns informer and feeds names to the Revenue men.",
                 fact("Elias Wren", "allegiance", "the Revenue men", "character")),
            Step(0.58, "Elias Wren swears himself to Lord Tremaine of the manor, who pays better than either crown "
                 "or cove.",
                 fact("Elias Wren", "allegiance", "Lord Tremaine of the manor", "character")),
            Step(0.88, "Sick of being bought and sold, Elias Wren renounces every master and throws in his lot with"
                 " the wreckers of Black Rock.",
                 fact("Elias Wren", "allegiance", "the wreckers of Black Rock", "character")),
        ),
        ("wreckers", "wrecker"), ("smugglers", "revenue", "tremaine"),
        (
            "Whose side is Elias Wren on now?",
            "Which faction does the young clergyman serve these days?",
        ),
        (
            "Elias Wren's sermons grow longer and duller with every Sunday.",
            "Elias Wren is seen buying tallow candles at the chandler's on the harbour front.",
        ),
    ),
    Chain(
        "pewter reliquary box",
        (
            Step(0.08, "The pewter reliquary box rests in the chapel crypt, tucked behind the founder's coffin "
                 "where only the sexton ever sweeps.",
                 fact("pewter reliquary box", "location", "in the chapel crypt")),
            Step(0.37, "Before dawn, Sexton Gideon Hobb carries the pewter reliquary box out of the crypt and "
                 "wedges it into the hollow oak beside the manor gate.",
                 fact("pewter reliquary box", "location", "in the hollow oak by the manor gate")),
            Step(0.81, "Now the pewter reliquary box lies beneath the straw in the inn's dovecote, where pigeons "
                 "coo over it day and night.",
                 fact("pewter reliquary box", "location", "under the straw in the inn's dovecote")),
        ),
        ("dovecote",), ("crypt", "oak"),
        (
            "Where is the pewter reliquary box now?",
            "Where has the little tin casket holding the saint's bone been hidden these days?",
        ),
        (
            "The pewter reliquary box is said to hold a knucklebone of Saint Piran, though nobody has opened it in "
            "years.",
            "Children dare one another to touch the pewter reliquary box for luck, and none of them ever does.",
        ),
    ),
    Chain(
        "keg of Nantes brandy",
        (
            Step(0.1, "The Pascoe boys roll the keg of Nantes brandy deep into the cave at Gullet Cove and heap "
                 "wet kelp over it.",
                 fact("keg of Nantes brandy", "location", "in the cave at Gullet Cove")),
            Step(0.29, "The keg of Nantes brandy is now in the net loft above the harbour.",
                 fact("keg of Nantes brandy", "location", "in the net loft above the harbour")),
            Step(0.52, "Dragged up the back lane by moonlight, the keg of Nantes brandy ends its journey in the "
                 "manor's ice house, packed among straw and frozen blocks.",
                 fact("keg of Nantes brandy", "location", "in the manor's ice house")),
            Step(0.77, "Fearing the squire's gamekeeper, the Pascoe boys haul the keg of Nantes brandy back to its "
                 "old hiding place in the cave at Gullet Cove.",
                 fact("keg of Nantes brandy", "location", "back in the cave at Gullet Cove")),
        ),
        ("gullet", "cave"), ("loft", "ice"),
        (
            "Where is the keg of Nantes brandy now?",
            "Where have the smugglers stashed that little cask of French spirits at this point?",
        ),
        (
            "The keg of Nantes brandy bears a chalked anchor on its lid, the Pascoe mark.",
            "Everyone in the taproom pretends never to have heard of a keg of Nantes brandy.",
        ),
    ),
    Chain(
        "ivory snuffbox",
        (
            Step(0.14, "Squire Ashcombe keeps the ivory snuffbox in his waistcoat pocket and taps its lid whenever "
                 "he tells a lie.",
                 fact("ivory snuffbox", "holder", "Squire Ashcombe")),
            Step(0.46, "Kit Dunmore, the stable lad, slips the ivory snuffbox out of the squire's riding coat while"
                 " brushing it, and pockets it with a grin.",
                 fact("ivory snuffbox", "holder", "Kit Dunmore, the stable lad")),
            Step(0.88, "It is the widow Rosamund Penhallow who owns the ivory snuffbox now, accepted as a winter's "
                 "rent and set proudly on her mantelpiece.",
                 fact("ivory snuffbox", "holder", "the widow Rosamund Penhallow")),
        ),
        ("penhallow", "rosamund"), ("ashcombe", "dunmore"),
        (
            "Who has the ivory snuffbox now?",
            "Who is currently in possession of the small carved case for powdered tobacco?",
        ),
        (
            "The ivory snuffbox has a ship carved on its lid, worn smooth by years of thumbs.",
            "Nobody in the village can afford snuff good enough for the ivory snuffbox.",
        ),
    ),
    Chain(
        "deed to the tide mill",
        (
            Step(0.18, "Obadiah Trenoweth, the miller, holds the deed to the tide mill, folded flat inside the "
                 "family Bible.",
                 fact("deed to the tide mill", "holder", "Obadiah Trenoweth, the miller")),
            Step(0.49, "One reckless hand of whist, and the deed to the tide mill passes across the inn table to "
                 "Captain Ezra Vosper.",
                 fact("deed to the tide mill", "holder", "Captain Ezra Vosper")),
            Step(0.84, "Having scraped together every shilling he can find, the miller buys back the deed to the "
                 "tide mill, and it rests once more with Obadiah Trenoweth.",
                 fact("deed to the tide mill", "holder", "Obadiah Trenoweth, the miller")),
        ),
        ("trenoweth", "obadiah"), ("vosper", "ezra"),
        (
            "Who holds the deed to the tide mill now?",
            "Who currently owns the paperwork proving title to the water-powered grinding works by the estuary?",
        ),
        (
            "The deed to the tide mill is written in a cramped clerk's hand and smells faintly of flour.",
            "Lawyers in Truro have twice asked to see the deed to the tide mill, and twice been refused.",
        ),
    ),
    Chain(
        "password for the sail-loft meetings",
        (
            Step(0.06, "Whoever climbs to the sail-loft meetings must murmur the password, cormorant, or answer to "
                 "Big Lowenna's cudgel.",
                 fact("password for the sail-loft meetings", "code", "cormorant")),
            Step(0.4, "After a stranger is overheard repeating it in the taproom, the password for the sail-loft "
                 "meetings becomes juniper.",
                 fact("password for the sail-loft meetings", "code", "juniper")),
            Step(0.73, "Lowenna breathes the new password for the sail-loft meetings into each ear in turn: "
                 "blackthorn.",
                 fact("password for the sail-loft meetings", "code", "blackthorn")),
        ),
        ("blackthorn",), ("cormorant", "juniper"),
        (
            "What is the password for the sail-loft meetings now?",
            "What secret word gets a man up the ladder to the gatherings above the canvas-makers' store these days?",
        ),
        (
            "Lowenna reminds everyone that the password for the sail-loft meetings is never to be written down.",
            "A drunk fisherman boasts he knows the password for the sail-loft meetings, but cannot for the life of "
            "him recall it.",
        ),
    ),
    Chain(
        "all-clear signal from the chapel belfry",
        (
            Step(0.21, "When the coast is free of riders, the all-clear signal from the chapel belfry is a single "
                 "green lamp hung in the east window.",
                 fact("all-clear signal from the chapel belfry", "code", "a single green lamp")),
            Step(0.63, "From tonight the all-clear signal from the chapel belfry changes: two blue lamps, one above"
                 " the other, mean the road is safe.",
                 fact("all-clear signal from the chapel belfry", "code", "two blue lamps, one above the other")),
        ),
        ("blue",), ("green",),
        (
            "What is the all-clear signal from the chapel belfry now?",
            "What light in the church tower tells a landing party that no riders are about?",
        ),
        (
            "The all-clear signal from the chapel belfry can be seen from every cove along the bay on a clear night.",
            "Old Zebedee swears he once missed the all-clear signal from the chapel belfry and spent a whole night "
            "afloat with forty kegs.",
        ),
    ),
    Chain(
        "Dorcas Kettleby's allegiance",
        (
            Step(0.25, "Dorcas Kettleby, the chandler's widow, sells every rumour she hears to Riding Officer "
                 "Fenwick of the Revenue.",
                 fact("Dorcas Kettleby",
                       "allegiance", "informing for Riding Officer Fenwick and the Revenue", "character")),
            Step(0.7, "Her debts paid off in French lace, Dorcas Kettleby now stands with Abel Scoble's free-"
                 "traders, body and soul.",
                 fact("Dorcas Kettleby", "allegiance", "with Abel Scoble's smugglers", "character")),
        ),
        ("scoble", "smugglers"), ("fenwick", "revenue"),
        (
            "Whose side is Dorcas Kettleby on now?",
            "Which camp does the chandler's widow currently serve?",
        ),
        (
            "Dorcas Kettleby keeps her shop shutters half-closed and her opinions entirely so.",
            "Dorcas Kettleby sells tallow, rope and gossip in roughly equal measure.",
        ),
    ),
    Chain(
        "Curate Barnaby Lusk's allegiance",
        (
            Step(0.11, "Curate Barnaby Lusk rows out with the Polkerris Brotherhood on moonless nights and blesses "
                 "every cargo they land.",
                 fact("Curate Barnaby Lusk", "allegiance", "with the Polkerris Brotherhood", "character")),
            Step(0.44, "Quietly, for a purse of guineas, Barnaby Lusk has gone over to the Carrow brothers, the "
                 "Brotherhood's bitterest rivals.",
                 fact("Curate Barnaby Lusk", "allegiance", "with the Carrow brothers", "character")),
            Step(0.86, "Fear of the noose drives Curate Barnaby Lusk into the arms of the dragoons, whose captain "
                 "now hears his every whisper.",
                 fact("Curate Barnaby Lusk", "allegiance", "informing for the dragoons", "character")),
        ),
        ("dragoons",), ("polkerris", "carrow"),
        (
            "Whose side is Curate Barnaby Lusk on now?",
            "Which faction has the young assistant clergyman thrown in his lot with lately?",
        ),
        (
            "Curate Barnaby Lusk preaches on the sin of covetousness with remarkable feeling.",
            "Curate Barnaby Lusk's sermons run long, and the back pews sleep soundly through them.",
        ),
    ),
    Chain(
        "lugger Kittiwake",
        (
            Step(0.16, "The lugger Kittiwake rides at anchor inside the harbour wall, her hull freshly tarred and "
                 "gleaming.",
                 fact("lugger Kittiwake", "state", "afloat, freshly tarred")),
            Step(0.58, "With a sprung plank to mend, the lugger Kittiwake is hauled up the slipway and careened on "
                 "her side.",
                 fact("lugger Kittiwake", "state", "careened on the slipway")),
            Step(0.91, "Off Rannock Point her own crew scuttle the lugger Kittiwake to hide the evidence, and she "
                 "goes down in ten fathoms.",
                 fact("lugger Kittiwake", "state", "scuttled and sunk off Rannock Point")),
        ),
        ("scuttled", "sunk", "sank", "fathoms"), ("slipway", "careened", "tarred"),
        (
            "What has become of the lugger Kittiwake?",
            "What is the present condition of that two-masted fishing craft named after a gull?",
        ),
        (
            "The lugger Kittiwake was built in Looe and is said to be the fastest hull on this coast.",
            "Gulls like to perch on the lugger Kittiwake's yards as though they own her.",
        ),
    ),
    Chain(
        "Zebedee's map of the caves",
        (
            Step(0.33, "Old Zebedee's map of the caves lies unrolled on the inn table, every passage inked in his "
                 "shaky hand.",
                 fact("Zebedee's map of the caves", "state", "intact, unrolled on the inn table")),
            Step(0.68, "Rather than let the dragoons find it, Lowenna feeds Zebedee's map of the caves to the "
                 "taproom fire until the last corner curls into ash.",
                 fact("Zebedee's map of the caves", "state", "burnt to ash")),
        ),
        ("burnt", "burned", "ash", "ashes"), ("intact", "unrolled"),
        (
            "What happened to Zebedee's map of the caves?",
            "Where can the old man's chart of the tunnels under the cliffs be found now?",
        ),
        (
            "Zebedee's map of the caves marks a passage that nobody living has ever walked.",
            "Lowenna says Zebedee's map of the caves is more memory than geography.",
        ),
    ),
)  # fmt: skip
