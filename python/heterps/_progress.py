"""The progress bar heterps.train() draws on a terminal."""

import sys


def _clock(seconds):
    seconds = int(seconds + 0.5)
    return f"{seconds // 60}:{seconds % 60:02d}"


class ProgressBar:
    """One line, redrawn in place after every step of an epoch."""

    def __init__(self, epochs, stream=None, width=30):
        self.epochs = epochs
        self.stream = stream or sys.stderr
        self.width = width

    def step(self, event):
        done = event["step"] / max(event["steps_per_epoch"], 1)
        filled = int(done * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(
            f"\repoch {event['epoch']}/{self.epochs} [{bar}] "
            f"{event['step']}/{event['steps_per_epoch']} "
            f"loss {event['loss']:.4f} {event['samples_per_s']:.0f} samples/s "
            f"ETA {_clock(event['seconds_left'])}   ")
        if event["step"] == event["steps_per_epoch"]:
            self.stream.write("\n")
        self.stream.flush()

    def close(self):
        self.stream.flush()
