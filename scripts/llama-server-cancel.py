"""Let llama.cpp's server cancel a call whose client hung up while other calls are being answered.

The server's HTTP thread waits for a call's results in turns of up to a second, and looks whether the client is
still there only when a turn ends with no result of any call: while another client's reply streams, each of its
pieces wakes the waiting thread early, the second never passes, and a call whose client hung up runs to its end.
The change: every wake is a moment to look (the waiting thread then looks again for its own results, as before).

    python scripts/llama-server-cancel.py LLAMA_CPP_SOURCE

Run by scripts/build-llama-server on the source it builds. Where the source reads otherwise (another llama.cpp),
it says so and leaves it as it is: the server then still cancels, later.
"""

from __future__ import annotations

import sys
from pathlib import Path

FILE = Path("tools/server/server-queue.cpp")
BEFORE = """        if (cr_res == std::cv_status::timeout) {
            return nullptr;
        }
"""
AFTER = """        (void) cr_res;
        return nullptr; // timed out or woken by any call's result: the caller looks whether its client is still there
"""


def main(source: str) -> int:
    path = Path(source) / FILE
    text = path.read_text()
    if AFTER in text:
        return 0
    if text.count(BEFORE) != 1:
        print(f"llama-server-cancel: {FILE} is not as expected; built unchanged (a call whose client hung up may run "
              "on beside a player's turn)", file=sys.stderr)  # fmt: skip
        return 0
    path.write_text(text.replace(BEFORE, AFTER))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
