"""What the dataset checkers share: the comparison of the lines a script printed with the lines
Paddle's algorithm gives, each differing line marked."""
import sys


def compare(log_path, want):
    got = [l for l in open(log_path).read().split('\n') if l]
    if got != want:
        for i in range(max(len(got), len(want))):
            a = got[i] if i < len(got) else '<none>'
            b = want[i] if i < len(want) else '<none>'
            print('%s %-60s %s' % ('  ' if a == b else '!=', a, b))
        sys.exit(1)
