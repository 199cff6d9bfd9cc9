"""``fpq figures``: reproductions of the papers' figures (work in progress)."""


def add_arguments(p):
    p.add_argument("--out", default="build/figures")


def main(args):
    raise ValueError("figures: not implemented yet")
