"""The held-out chains of ``bench change`` (see bot.bench.change_chains): written apart, by a writer who had not
read the change finder, and reported apart; moved to the tuned chains once their misses are looked into."""

from __future__ import annotations

from bot.bench.change_chains import TUNED, Chain, Step, fact

HELD_OUT: tuple[Chain, ...] = (
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

CHAINS = TUNED + HELD_OUT
