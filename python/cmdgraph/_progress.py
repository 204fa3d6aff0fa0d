"""``Module.compile(progress=True)``: a progress line on stderr, as the CLI draws it — shown
once the compile has taken a second, redrawn in place at most ten times a second, cleared
when it ends."""

import sys
import time


class Line:
    """A progress callable drawing one line on stderr."""

    def __init__(self, stream=None, quiet_for=1.0):
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.monotonic()
        self.quiet_for = quiet_for
        self.last = 0.0
        self.shown = False

    def __call__(self, phase, done, total, what):
        now = time.monotonic()
        if phase == "finishing":
            if self.shown:
                self.stream.write("\r" + " " * 79 + "\r")
                self.stream.flush()
            return
        if now - self.start < self.quiet_for or now - self.last < 0.1:
            return
        self.last = now
        text = f"compiling: {phase} {min(done + 1, total)}/{total} {what} ({now - self.start:.0f} s)"
        self.stream.write("\r" + text[:79].ljust(79))
        self.stream.flush()
        self.shown = True
