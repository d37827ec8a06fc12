"""The held-out chains of ``bench change`` (see bot.bench.change_chains): written apart, by a writer who had not
read the change finder, and reported apart; moved to bot.bench.change_seen once their misses are looked into."""

from __future__ import annotations

from bot.bench.change_chains import TUNED, Chain, Step, fact
from bot.bench.change_seen import SEEN

HELD_OUT: tuple[Chain, ...] = (
    Chain(
        'coral reliquary voyage',
        (
            Step(0.05, 'Captain Oriel Vance sets the coral reliquary down in the chartroom of the Saltwren, '
                 'wedged between the rum casks and the tide tables.',
                 fact('coral reliquary', 'location', 'chartroom of the Saltwren', 'item')),
            Step(0.3, 'When the squall hits, the reliquary is carried below and lashed inside the bilge locker, '
                 'where the crew swear no salt-ghost would think to look.',
                 fact('coral reliquary', 'location', 'bilge locker', 'item')),
            Step(0.55, 'Come dawn at Harrowmere quay, you watch the bosun haul it ashore; the coral reliquary is '
                 'signed into the customs house strongroom.',
                 fact('coral reliquary', 'location', 'customs house strongroom at Harrowmere', 'item')),
            Step(0.8, 'By the time the bells of Ketterby ring noon, the coral reliquary rests on the altar of '
                 'the drowned chapel, delivered there by smugglers who lifted it from the customs house.',
                 fact('coral reliquary', 'location', 'altar of the drowned chapel at Ketterby', 'item')),
        ),
        ('chapel', 'altar'),
        ('chartroom', 'bilge', 'strongroom'),
        ('Where is the coral reliquary now?',
         "Where has Captain Vance's pink sea-stone relic box ended up?",),
        ('The coral reliquary hums faintly whenever the tide turns, a sound like distant singing.',
         'Old sailors spit over the rail at any mention of the coral reliquary.',
         'Frost forms in odd spirals on the lid of the coral reliquary.',),
    ),
    Chain(
        'pewter orrery of Blackthorn Hall',
        (
            Step(0.08, 'In the east wing of Blackthorn Hall the pewter orrery sits beneath a dust sheet in the '
                 'library, its planets frozen mid-turn.',
                 fact('pewter orrery', 'location', 'library', 'item')),
            Step(0.25, 'Lady Corvina, fearing thieves, has it moved up to the bell tower; two footmen groan '
                 "under the orrery's weight all the way up the spiral stair.",
                 fact('pewter orrery', 'location', 'bell tower', 'item')),
            Step(0.5, "'I had the orrery taken down to the wine cellar,' the butler Hesketh confides, 'behind "
                 "the Amontillado racks, where no prying eyes will find it.'",
                 fact('pewter orrery', 'location', 'wine cellar', 'item')),
            Step(0.75, 'Once the storm has passed, the orrery is restored to its old place in the library, dust '
                 'sheet and all, as though it had never left.',
                 fact('pewter orrery', 'location', 'library', 'item')),
        ),
        ('library',),
        ('tower', 'cellar', 'Amontillado'),
        ('Where is the pewter orrery now?',
         "Where would I find Lady Corvina's clockwork model of the planets at this point?",),
        ('The pewter orrery chimes a thin, discordant note at midnight.',
         'Lady Corvina speaks of the pewter orrery as though it were a living relative.',
         'Someone has polished the smallest moon of the pewter orrery until it gleams.',),
    ),
    Chain(
        'Varangian drinking horn',
        (
            Step(0.1, "The Varangian drinking horn hangs from the rafters of Jarl Hrothgeir's mead hall at "
                 'Skarvik, blackened by a century of hearth smoke.',
                 fact('Varangian drinking horn', 'location', 'rafters of the mead hall at Skarvik', 'item')),
            Step(0.35, 'Three nights later the drinking horn turns up in the herring nets off Fiskeholm, and the '
                 'fishermen nail it to their smokehouse door for luck.',
                 fact('Varangian drinking horn', 'location', 'smokehouse door at Fiskeholm', 'item')),
            Step(0.6, 'Between verses the skald lets slip that the horn now lies buried in the barrow of '
                 'Ulfrida the Pale, laid beside her by her grieving sons.',
                 fact('Varangian drinking horn', 'location', 'barrow of Ulfrida the Pale', 'item')),
        ),
        ('barrow', 'Ulfrida'),
        ('rafters', 'Skarvik', 'Fiskeholm', 'smokehouse', 'mead'),
        ('Where is the Varangian drinking horn now?',
         "Where has the jarl's old rune-banded ale vessel got to?",),
        ('The Varangian drinking horn is banded with bronze runes no living skald can read.',
         'Children dare each other to touch the Varangian drinking horn for courage.',),
    ),
    Chain(
        'lapis compass of Venice',
        (
            Step(0.06, 'Signora Bellamonte keeps the lapis compass on a chain at her throat, never letting it '
                 'out of her sight as she walks the Rialto.',
                 fact('lapis compass', 'holder', 'Signora Bellamonte', 'item')),
            Step(0.3, 'At the masked ball it changes hands: the lapis compass is lifted from her neck by a '
                 'pickpocket called Tonio Scarsi, quick as a lizard.',
                 fact('lapis compass', 'holder', 'Tonio Scarsi', 'item')),
            Step(0.55, 'Drowning in debt, Scarsi sells the compass to the Ottoman envoy Kemal Reis for forty '
                 'ducats and a boat out of the lagoon.',
                 fact('lapis compass', 'holder', 'Kemal Reis', 'item')),
            Step(0.85, "'The compass? The envoy lost it at dice to the Doge's nephew, young Alvise Contarini,' a "
                 'gondolier tells you with a grin.',
                 fact('lapis compass', 'holder', 'Alvise Contarini', 'item')),
        ),
        ('Alvise', 'Contarini'),
        ('Bellamonte', 'Tonio', 'Scarsi', 'Kemal'),
        ('Who has the lapis compass now?',
         "Who is currently in possession of the blue-stone navigator's needle from Venice?",),
        ('The lapis compass never points north; it points toward whatever its bearer most desires.',
         'Gondoliers sing a bawdy verse about the lapis compass.',),
    ),
    Chain(
        'thornwood staff of the druids',
        (
            Step(0.12, 'Archdruid Maelona bears the thornwood staff at the solstice rite, its knots glowing '
                 'green in the firelight.',
                 fact('thornwood staff', 'holder', 'Archdruid Maelona', 'item')),
            Step(0.4, 'Wounded at Caer Dunoch, Maelona presses the staff into the hands of her apprentice, '
                 'Fenwick Ashgrove, and bids him keep it safe.',
                 fact('thornwood staff', 'holder', 'Fenwick Ashgrove', 'item')),
            Step(0.65, "Torn from Fenwick's grip in the ambush, the thornwood staff is carried off by the raider "
                 'chief Gorvath Redhand to hang above his saddle.',
                 fact('thornwood staff', 'holder', 'Gorvath Redhand', 'item')),
            Step(0.88, 'Recovered at last in the raid on the war camp, the thornwood staff is laid once more in '
                 "Maelona's hands, and she leans on it as she limps home.",
                 fact('thornwood staff', 'holder', 'Archdruid Maelona', 'item')),
        ),
        ('Maelona',),
        ('Fenwick', 'Ashgrove', 'Gorvath', 'Redhand'),
        ('Who holds the thornwood staff now?',
         "In whose hands is the druids' knotted oak rod at present?",),
        ('The thornwood staff is said to have been cut from the first oak of the world.',
         'Birds fall silent whenever the thornwood staff passes beneath them.',),
    ),
    Chain(
        'Quillhaven sewer watchword',
        (
            Step(0.07, 'The smuggler Moll Farrow whispers that the watchword for the Quillhaven sewer grate is '
                 "'heronfeather'.",
                 fact('Quillhaven sewer grate watchword', 'code', 'heronfeather', 'item')),
            Step(0.33, "After the raid the guild changed it; 'brinewolf' is the sewer watchword now, or so says "
                 "the scrap you pull from a dead courier's boot.",
                 fact('Quillhaven sewer grate watchword', 'code', 'brinewolf', 'item')),
            Step(0.62, "'Since the full moon the guild's sworn by a new watchword,' Farrow mutters. 'Say "
                 "mothwing at the grate, or you eat a crossbow bolt.'",
                 fact('Quillhaven sewer grate watchword', 'code', 'mothwing', 'item')),
        ),
        ('mothwing',),
        ('heronfeather', 'brinewolf'),
        ('What is the Quillhaven sewer grate watchword now?',
         "What's the current password to get through the drain gate beneath the city?",),
        ('The Quillhaven sewer grate watchword is never written down in the same hand twice.',
         'Beggars claim they can sell you the Quillhaven sewer grate watchword, but they always '
         'lie.',),
    ),
    Chain(
        'Ravensworth crypt lock',
        (
            Step(0.15, "According to the sexton's diary, the clockwork lock on the Ravensworth crypt opens to "
                 'three sigils: owl, serpent, chalice, in that order.',
                 fact('Ravensworth crypt lock', 'code', 'owl, serpent, chalice', 'item')),
            Step(0.45, "Old Mortlake reset the lock's dials before he died; his last letter gives the new "
                 'sequence for the crypt as bell, thistle, anvil.',
                 fact('Ravensworth crypt lock', 'code', 'bell, thistle, anvil', 'item')),
            Step(0.7, 'Someone has tampered with the Ravensworth lock again: fresh scratches on the brass show '
                 'the dials set to wolf, lily, crown, and the crypt door yields to that sequence.',
                 fact('Ravensworth crypt lock', 'code', 'wolf, lily, crown', 'item')),
        ),
        ('lily', 'wolf'),
        ('owl', 'serpent', 'chalice', 'thistle', 'anvil'),
        ("What's the combination of the Ravensworth crypt lock now?",
         'Which sigils open the clockwork tomb door at the old manor these days?',),
        ('The Ravensworth crypt lock ticks softly, even when no one touches it.',
         'Villagers cross themselves when they hear the Ravensworth crypt lock after dark.',),
    ),
    Chain(
        "Isolde Varga's colours",
        (
            Step(0.1, 'Isolde Varga flies the colours of the Crown of Aldmere, hunting pirates up and down the '
                 'Shattered Coast.',
                 fact('Isolde Varga', 'allegiance', 'Crown of Aldmere', 'character')),
            Step(0.4, 'Word reaches port that Varga has turned her coat: the Crown stopped paying, so she has '
                 'sworn her sloop to the Brotherhood of the Black Tide.',
                 fact('Isolde Varga', 'allegiance', 'Brotherhood of the Black Tide', 'character')),
            Step(0.7, "Offered a full pardon, Varga has come back into royal service, the Admiralty's letter "
                 'says; she sails for the Crown of Aldmere once more, escorting its treasure fleet.',
                 fact('Isolde Varga', 'allegiance', 'Crown of Aldmere', 'character')),
        ),
        ('Aldmere', 'Crown'),
        ('Brotherhood', 'Tide'),
        ('Which side does Isolde Varga serve now?',
         'Whom does that privateer captain with the gull feather fight for at present?',),
        ('Isolde Varga wears a gull feather in her hat, plucked on her first voyage.',
         'Sailors say Isolde Varga has never lost a duel at sea.',),
    ),
    Chain(
        'Sable Lances contract',
        (
            Step(0.05, 'The Sable Lances, three hundred horse strong, take the florins of the Duke of Montesoro '
                 'and guard his river forts.',
                 fact('Sable Lances', 'allegiance', 'Duke of Montesoro', 'character')),
            Step(0.28, 'By spring the Lances have been bought out from under the duke; they ride now beneath the '
                 'banner of the Republic of Vellari.',
                 fact('Sable Lances', 'allegiance', 'Republic of Vellari', 'character')),
            Step(0.5, 'It is the Archbishop of Saint Cerne, not the Republic, who pays the Sable Lances after '
                 'the siege, so their own paymaster blurts out, drunk in a tavern.',
                 fact('Sable Lances', 'allegiance', 'Archbishop of Saint Cerne', 'character')),
            Step(0.78, 'Their paymaster now signs contracts in the name of the rebel Countess Ilaria, and the '
                 'Sable Lances have joined her war against every lord in the valley.',
                 fact('Sable Lances', 'allegiance', 'Countess Ilaria', 'character')),
        ),
        ('Ilaria', 'Countess'),
        ('Montesoro', 'Vellari', 'Archbishop', 'Cerne'),
        ('Who do the Sable Lances fight for now?',
         'Which employer pays that black-horse mercenary company at this point?',),
        ('The Sable Lances ride black horses and never carry a personal pennant.',
         'Children in the valley hide whenever the Sable Lances are spoken of.',),
    ),
    Chain(
        'Eyrie lens of Gullstone',
        (
            Step(0.1, 'The great Eyrie lens atop Gullstone lighthouse is flawless, its prisms throwing the beam '
                 'twenty leagues out to sea.',
                 fact('Eyrie lens', 'state', 'flawless', 'item')),
            Step(0.35, 'A hailstone the size of a fist strikes the lens during the gale; a hairline crack now '
                 'runs across its lowest prism.',
                 fact('Eyrie lens', 'state', 'cracked', 'item')),
            Step(0.6, 'Frost has widened the fracture, the keeper reports: half the Eyrie lens is now clouded '
                 'and chipped, and the beam gutters.',
                 fact('Eyrie lens', 'state', 'clouded and chipped', 'item')),
            Step(0.85, "When the wreckers' torches went up, the Eyrie lens shattered into a thousand glittering "
                 'pieces across the lamp room floor.',
                 fact('Eyrie lens', 'state', 'shattered', 'item')),
        ),
        ('shattered', 'pieces'),
        ('flawless', 'crack', 'clouded', 'chipped', 'fracture'),
        ('What condition is the Eyrie lens in now?',
         "What shape is the lighthouse's great glass in these days?",),
        ("Ships' captains bless themselves when they speak of the Eyrie lens.",
         'The Eyrie lens was ground by monks a century ago from sand of the Gullstone dunes.',),
    ),
    Chain(
        'merrow flask doses',
        (
            Step(0.12, 'Grandmother Wynn hands over the merrow flask brimming with sea-green elixir, enough, she '
                 'says, for a whole crew to breathe beneath the waves.',
                 fact('merrow flask', 'state', 'brimming', 'item')),
            Step(0.38, 'After the dive to the sunken abbey the merrow flask sloshes only half-full; four of you '
                 'drank deep.',
                 fact('merrow flask', 'state', 'half-full', 'item')),
            Step(0.6, 'Barely a mouthful of dregs rattles in the flask once Tamsin takes her sip before the '
                 'reef crossing.',
                 fact('merrow flask', 'state', 'dregs', 'item')),
            Step(0.82, 'Drained to the last drop by the drowning cabin boy, the merrow flask is now bone dry.',
                 fact('merrow flask', 'state', 'empty', 'item')),
        ),
        ('empty', 'drained', 'dry'),
        ('brimming', 'half', 'dregs', 'mouthful'),
        ('What state is the merrow flask in now?',
         "How much is left in Grandmother Wynn's sea-green potion bottle?",),
        ("The merrow flask is stoppered with a cork carved like a fish's head.",
         'Grandmother Wynn warned that the merrow flask must never touch river water.',),
    ),
    Chain(
        'Tidewright chart',
        (
            Step(0.09, "The Tidewright chart lies locked in the captain's cabin of the galleon Merciful Dawn, "
                 'rolled inside an oilskin tube.',
                 fact('Tidewright chart', 'location', "captain's cabin of the Merciful Dawn", 'item')),
            Step(0.3, 'During the mutiny, first mate Corwin Thale pockets the chart and keeps it buttoned '
                 'inside his coat.',
                 fact('Tidewright chart', 'holder', 'Corwin Thale', 'item')),
            Step(0.55, "Thale's drowned, and the harbourmaster at Pellmoor swears the sea-witch Ondra cut the "
                 'chart from his coat before the crabs got to him.',
                 fact('Tidewright chart', 'holder', 'Ondra the sea-witch', 'item')),
            Step(0.8, 'The witch had no use for it, it seems: the Tidewright chart now hangs nailed above the '
                 'hearth of the Cracked Bell tavern in Saltmarrow, for any drinker to squint at.',
                 fact('Tidewright chart', 'location', 'above the hearth of the Cracked Bell tavern in '
                      'Saltmarrow', 'item')),
        ),
        ('tavern', 'Saltmarrow', 'hearth'),
        ('Merciful', 'Corwin', 'Thale', 'Ondra', 'Pellmoor'),
        ('Where is the Tidewright chart now?',
         'Where has that map of hidden sea currents ended up?',),
        ('The Tidewright chart shows currents that no other map has ever recorded.',
         'Scholars in three ports would pay a fortune just to copy the Tidewright chart.',),
    ),
)  # fmt: skip

CHAINS = TUNED + SEEN + HELD_OUT
