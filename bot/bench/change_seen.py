"""Chains of ``bench change`` once held out (see bot.bench.change_held_out), written by a writer who had not read
the change finder, run and reported held out, then looked into: tuned since. Their word lists are corrected where a
word of an older or the latest value is also a word of the thing's name, its filler or its questions ("the only key
to the sea chest", "Seraphine's maid"), which counted a value that was not shown."""

from __future__ import annotations

from dataclasses import replace

from bot.bench.change_chains import Chain, Step, fact

_WRITTEN: tuple[Chain, ...] = (
    Chain(
        'jade hourglass',
        (
            Step(0.1, "The jade hourglass stands on the mantel of the abbot's study, its green sand long since "
                 'run out.',
                 fact('jade hourglass', 'location', "on the mantel of the abbot's study", 'item')),
            Step(0.3, 'Brother Anselm carries the jade hourglass down to the crypt and sets it in an empty niche '
                 'beside the ossuary.',
                 fact('jade hourglass', 'location', 'in a niche in the crypt beside the ossuary', 'item')),
            Step(0.55, 'By vespers the jade hourglass has somehow found its way up into the bell tower, wedged '
                 "behind the great bell's oak frame.",
                 fact('jade hourglass', 'location', 'in the bell tower, wedged behind the bell frame', 'item')),
            Step(0.8, '"Put it back where it belongs," the abbot snaps, and Anselm, red-faced, returns the jade '
                 'hourglass to the mantel of the study.',
                 fact('jade hourglass', 'location', "on the mantel of the abbot's study", 'item')),
        ),
        ('mantel', "abbot's", 'study'),
        ('bell', 'crypt', 'frame', 'niche', 'ossuary', 'tower', 'wedged'),
        (
            'Where is the jade hourglass now?',
            "Where is the abbey's green sand-timer kept now?",
        ),
        (
            'Anselm murmurs that the jade hourglass was a gift from a bishop long dead.',
            'The novices whisper that the jade hourglass turns itself over on moonless nights.',
            'Candlelight catches the jade hourglass and throws a green glimmer across the wall.',
        ),
    ),
    Chain(
        'iron-bound sea chest',
        (
            Step(0.08, "The iron-bound sea chest is lashed beneath the bosun's hammock on the orlop deck.",
                 fact(
                     'iron-bound sea chest',
                     'location',
                     "beneath the bosun's hammock on the orlop deck",
                     'item',
                 )),
            Step(0.4, 'During the squall the iron-bound sea chest was dragged aft by four men and chained to the '
                 'foot of the mizzen mast.',
                 fact('iron-bound sea chest', 'location', 'chained to the foot of the mizzen mast', 'item')),
            Step(0.8, 'Captain Morwenna had the iron-bound sea chest rowed ashore at dusk; it now lies buried '
                 'under the leaning palm on Gull Key.',
                 fact('iron-bound sea chest', 'location', 'buried under the leaning palm on Gull Key', 'item')),
        ),
        ('buried', 'leaning', 'palm', 'gull', 'key'),
        ('beneath', "bosun's", 'chained', 'deck', 'foot', 'hammock', 'mast', 'mizzen', 'orlop'),
        (
            'Where is the iron-bound sea chest now?',
            "Where did the bosun's heavy strongbox end up?",
        ),
        (
            'The crew swear the iron-bound sea chest is heavier than any gold could make it.',
            'Morwenna keeps the only key to the iron-bound sea chest, or so the cook claims.',
            'Rust streaks the corners of the iron-bound sea chest like old blood.',
        ),
    ),
    Chain(
        'wax-sealed petition',
        (
            Step(0.08, "The wax-sealed petition lies in the top drawer of Chancellor Vey's writing desk, under a "
                 'blotter.',
                 fact(
                     'wax-sealed petition',
                     'location',
                     "in the top drawer of Chancellor Vey's writing desk",
                     'item',
                 )),
            Step(0.4, 'Someone has moved the wax-sealed petition: the clerk admits it was locked away in the '
                 'chancellery strongroom overnight.',
                 fact('wax-sealed petition', 'location', 'in the chancellery strongroom', 'item')),
            Step(0.8, 'Vey, pale and sweating, feeds the wax-sealed petition to the brazier; the seal bubbles, '
                 'the parchment curls, and nothing is left but grey ash.',
                 fact('wax-sealed petition', 'location', 'burned to ash in the brazier, destroyed', 'item')),
        ),
        ('burned', 'ash', 'brazier', 'destroyed'),
        ('chancellery', 'chancellor', 'desk', 'drawer', 'strongroom', 'top', "vey's", 'writing'),
        (
            'Where is the wax-sealed petition now?',
            "What became of the guild's sealed appeal to the chancellor?",
        ),
        (
            "The wax-sealed petition bears the stamp of the Weavers' Guild, a spindle crossed with a "
            'shuttle.',
            'Forty names are said to be signed at the foot of the wax-sealed petition.',
            'The guildmaster asks twice whether the chancellor has read the wax-sealed petition yet.',
        ),
    ),
    Chain(
        'bone whistle',
        (
            Step(0.1, 'Old Tamsin keeps the bone whistle on a leather cord around her neck.',
                 fact('bone whistle', 'holder', 'Old Tamsin', 'item')),
            Step(0.3, 'Tamsin presses the bone whistle into young Pell\'s palm. "Blow it only if the wolves come '
                 'down from the ridge."',
                 fact('bone whistle', 'holder', 'young Pell', 'item')),
            Step(0.55, 'Pell loses a wager at knucklebones that night, and the bone whistle passes to Garrick the '
                 'drover.',
                 fact('bone whistle', 'holder', 'Garrick the drover', 'item')),
            Step(0.8, 'Shamefaced, Garrick gives the bone whistle back to Old Tamsin before the first snow.',
                 fact('bone whistle', 'holder', 'Old Tamsin', 'item')),
        ),
        ('old', 'tamsin'),
        ('drover', 'garrick', 'pell', 'young'),
        (
            'Who has the bone whistle now?',
            "Who is carrying the shepherds' wolf-call now?",
        ),
        (
            "The bone whistle is carved from a ewe's shin and has gone yellow with age.",
            'The villagers say the bone whistle can be heard three valleys away.',
            'Nobody has blown the bone whistle since the hard winter when the river froze.',
        ),
    ),
    Chain(
        'obsidian dagger',
        (
            Step(0.1, "The obsidian dagger hangs at Lady Seraphine's girdle, sheathed in black velvet.",
                 fact('obsidian dagger', 'holder', 'Lady Seraphine', 'item')),
            Step(0.3, 'In the crush of the fish market a cutpurse lifts it from her belt; by noon the obsidian '
                 'dagger is being shown off by a grubby boy called Wick.',
                 fact('obsidian dagger', 'holder', 'Wick, the cutpurse boy', 'item')),
            Step(0.55, 'Wick sells the obsidian dagger to Master Orrin the fence for three silver and a meat pie.',
                 fact('obsidian dagger', 'holder', 'Master Orrin the fence', 'item')),
            Step(0.8, 'The obsidian dagger is seized by Captain Hale of the watch when his men kick in the door '
                 "of Orrin's shop, and he keeps it as evidence.",
                 fact('obsidian dagger', 'holder', 'Captain Hale of the watch', 'item')),
        ),
        ('captain', 'hale', 'watch'),
        ('boy', 'cutpurse', 'fence', 'lady', 'master', 'orrin', 'seraphine', 'wick'),
        (
            'Who has the obsidian dagger now?',
            'Who is holding the black glass blade now?',
        ),
        (
            'The edge of the obsidian dagger is sharp enough to split a hair lengthwise.',
            'Rumour has it the obsidian dagger was chipped from the altar stone of a drowned temple.',
            "Seraphine's maid shudders whenever the obsidian dagger is mentioned.",
        ),
    ),
    Chain(
        'Sir Edric of Harrowmoor',
        (
            Step(0.08, 'Sir Edric of Harrowmoor kneels before Queen Isolde and swears his sword to the Silver '
                 'Throne.',
                 fact(
                     'Sir Edric of Harrowmoor',
                     'allegiance',
                     'loyal to Queen Isolde and the Silver Throne',
                     'character',
                 )),
            Step(0.4, 'Word reaches the court that Sir Edric of Harrowmoor rode north in the night to join the '
                 'rebel Earl Mortane.',
                 fact('Sir Edric of Harrowmoor', 'allegiance', 'with the rebel Earl Mortane', 'character')),
            Step(0.8, 'Sickened by the burning of the river villages, Sir Edric breaks with the earl and offers '
                 'his lance to the free companies of the Marches.',
                 fact(
                     'Sir Edric of Harrowmoor',
                     'allegiance',
                     'with the free companies of the Marches',
                     'character',
                 )),
        ),
        ('free', 'companies', 'marches'),
        ('earl', 'isolde', 'loyal', 'mortane', 'queen', 'rebel', 'silver', 'throne'),
        (
            'Whose side is Sir Edric of Harrowmoor on now?',
            'Who does the knight from Harrowmoor serve now?',
        ),
        (
            "Sir Edric of Harrowmoor's squire oils his master's mail in silence.",
            'Minstrels still sing of the day Sir Edric of Harrowmoor unhorsed three champions at '
            'Belford.',
            "Sir Edric's grey destrier is lame in one foreleg, and he will ride no other.",
        ),
    ),
    Chain(
        "the Gray Lantern's crew",
        (
            Step(0.08, "The Gray Lantern's crew fly the colours of the Brine Company and answer to Commodore "
                 'Sallow.',
                 fact(
                     "the Gray Lantern's crew",
                     'allegiance',
                     'the Brine Company under Commodore Sallow',
                     'character',
                 )),
            Step(0.4, "When Sallow withholds their pay a third month running, the Gray Lantern's crew run up the "
                 'black and sail for the pirate queen Ysolt Marr.',
                 fact("the Gray Lantern's crew", 'allegiance', 'the pirate queen Ysolt Marr', 'character')),
            Step(0.8, '"We\'re Company men again," the Gray Lantern\'s quartermaster tells you with a wink; a royal '
                 'pardon and back wages from Sallow have bought them home.',
                 fact(
                     "the Gray Lantern's crew",
                     'allegiance',
                     'the Brine Company under Commodore Sallow',
                     'character',
                 )),
        ),
        ('brine', 'company', 'commodore', 'sallow'),
        ('marr', 'pirate', 'queen', 'ysolt'),
        (
            "Whose side is the Gray Lantern's crew on now?",
            'Who do the sailors of that grey-sailed sloop answer to now?',
        ),
        (
            "The Gray Lantern's crew are known in every port for their tattooed knuckles.",
            "Half of the Gray Lantern's crew cannot swim, which they consider good luck.",
            "The Gray Lantern's crew sing a shanty about a drowned bride as they haul the sheets.",
        ),
    ),
    Chain(
        'password of the ossuary gate',
        (
            Step(0.08, "The sexton leans close: the password of the ossuary gate is 'nightjar'.",
                 fact('password of the ossuary gate', 'code', 'nightjar', 'item')),
            Step(0.4, "After the grave-robbers' break-in, the password of the ossuary gate was changed to 'hollow "
                 "moon'.",
                 fact('password of the ossuary gate', 'code', 'hollow moon', 'item')),
            Step(0.8, 'A note slipped under your door reads: "The ossuary gate now answers to thistle-and-ash. '
                 'Burn this."',
                 fact('password of the ossuary gate', 'code', 'thistle-and-ash', 'item')),
        ),
        ('thistle-and-ash',),
        ('hollow', 'moon', 'nightjar'),
        (
            'What is the password of the ossuary gate now?',
            'What word opens the bone-house gate in the cemetery now?',
        ),
        (
            'The ossuary gate is black iron, its bars wrought in the shape of finger bones.',
            'The sexton grumbles that too many people know the password of the ossuary gate.',
            'Fog pools against the ossuary gate each night, thick as milk.',
        ),
    ),
    Chain(
        'flask of healing draught',
        (
            Step(0.1, 'The flask of healing draught is full to the stopper, the red liquid glowing faintly in the '
                 'firelight.',
                 fact('flask of healing draught', 'state', 'full', 'item')),
            Step(0.3, 'Mirela takes a long pull from the flask of healing draught after the ghoul rakes her arm; '
                 'half of it is gone.',
                 fact('flask of healing draught', 'state', 'half full', 'item')),
            Step(0.55, 'Brannock drinks to close the gash in his thigh, and only a thin finger of red is left at '
                 'the bottom of the flask.',
                 fact('flask of healing draught', 'state', 'nearly empty', 'item')),
            Step(0.8, "Mirela tips the last drops onto the dying scout's lips, and the flask of healing draught "
                 'is dry.',
                 fact('flask of healing draught', 'state', 'empty, used up', 'item')),
        ),
        ('used',),
        ('full', 'half', 'nearly'),
        (
            'How much is left in the flask of healing draught now?',
            "What state is the party's red healing potion in now?",
        ),
        (
            'The flask of healing draught was brewed by the hedge-witch of Corrow Fen.',
            'The flask of healing draught smells of iron and crushed mint.',
            'Brannock grumbles that the flask of healing draught tastes like pond water.',
        ),
    ),
    Chain(
        'moon mirror',
        (
            Step(0.08, "The moon mirror hangs whole and unblemished above the altar of Saint Wendreth's chapel.",
                 fact('moon mirror', 'state', 'intact', 'item')),
            Step(0.4, 'When the banshee screams, a hairline crack races across the moon mirror from corner to '
                 'corner.',
                 fact('moon mirror', 'state', 'cracked', 'item')),
            Step(0.8, 'Vesper swings her staff; the moon mirror bursts into a thousand silver shards that skitter '
                 'across the chapel flagstones.',
                 fact('moon mirror', 'state', 'shattered, destroyed', 'item')),
        ),
        ('shattered', 'destroyed'),
        ('cracked', 'intact'),
        (
            'What state is the moon mirror in now?',
            "What condition is the chapel's silvered looking-glass in now?",
        ),
        (
            'Pilgrims claim the moon mirror shows the faces of the drowned.',
            "The moon mirror's frame is worked with wolves chasing a crescent moon.",
            'Vesper refuses to look directly at the moon mirror, muttering about old bargains.',
        ),
    ),
)  # fmt: skip


# (latest, older): the corrected word lists, where a word also named the thing, its filler or its questions
_CORRECTED: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None]] = {
    "Sir Edric of Harrowmoor": (("companies", "marches"), ("earl", "isolde", "mortane", "throne", "rebel")),
    "bone whistle": (("tamsin",), ("drover", "garrick", "pell")),
    "flask of healing draught": (("dry", "empty", "used"), None),
    "iron-bound sea chest": (("buried", "leaning", "palm"), None),
    "obsidian dagger": (("hale",), ("cutpurse", "fence", "orrin", "wick")),
    "wax-sealed petition": (None, ("chancellery", "desk", "drawer", "strongroom", "vey's")),
}

SEEN: tuple[Chain, ...] = tuple(
    replace(chain, latest=_CORRECTED[chain.name][0] or chain.latest, older=_CORRECTED[chain.name][1] or chain.older)
    if chain.name in _CORRECTED
    else chain
    for chain in _WRITTEN
)
