"""README.md and docs/*.md name few commits: the commit a figure was measured at is in its
measurement record (docs/benchmarks/NAME.json), and the documents name and link the record
instead of repeating the commit."""

import re
from pathlib import Path

from fpq.fields import FIELDS
from fpq.config import Build

ROOT = Path(__file__).resolve().parents[2]
#: the documents read (the top of docs/ only: the records in docs/benchmarks/ hold commits)
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: fewer commit hashes than this in all of them together
MAX_COMMITS = 10
#: a commit as git prints it: 7-12 lowercase hex digits (abbreviated) or 40 (full), a word
#: of its own, with a letter and a digit among them (so that no decimal number, nor a word
#: such as "decade", counts; a hex value written 0x... is not a word of its own)
COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])"
                    r"(?:[0-9a-f]{7,12}|[0-9a-f]{40})\b")


def key_defaults():
    """The hex text of the default keys: the Toeplitz key is 40 hex digits, as a commit."""
    out = set()
    for f in FIELDS:
        if f.type == "bytes":
            for build in (Build(), Build(flow_key="ipv6")):
                out.add((f.default(build) if callable(f.default) else f.default).hex())
    return out


def commits(text, keys=frozenset()):
    return [m for m in COMMIT.findall(text) if m not in keys]


def test_the_pattern_finds_commits_only():
    keys = key_defaults()
    assert commits("measured at commit 597d7bb, 9b2b397 and 2b934e3ab1c0.") == \
        ["597d7bb", "9b2b397", "2b934e3ab1c0"]
    assert commits("see 6e1f4c7d0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d") == \
        ["6e1f4c7d0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d"]
    # decimal numbers, a float's digits, words, 0x values, keys longer than a commit
    assert commits("9344215 1048575 4.242265237058028e-05 decade deadbeef 0xdeadbeef1 "
                   "0x3fff_ffff 243f6a8885a308d313198a2e") == []
    # the default Toeplitz key is as long as a full commit, and is not one
    rss = next(k for k in keys if len(k) == 40)
    assert commits(f"hash_key = {rss}", keys) == []
    assert commits(f"hash_key = {rss}") == [rss]


def test_fewer_than_ten_commit_hashes_in_the_documents():
    keys = key_defaults()
    found = [(path.relative_to(ROOT).as_posix(), c) for path in DOCUMENTS
             for c in commits(path.read_text(), keys)]
    assert len(found) < MAX_COMMITS, \
        f"{len(found)} commit hashes (fewer than {MAX_COMMITS} allowed): {found}"


def test_record_links_lead_to_the_records():
    """The documents that name records instead of their commits link files that exist."""
    for name in ("BENCHMARKS.md", "DATASHEET.md"):
        links = re.findall(r"\]\((benchmarks/[^)]+\.json)\)", (ROOT / "docs" / name).read_text())
        assert links, name
        missing = [link for link in links if not (ROOT / "docs" / link).is_file()]
        assert not missing, f"{name}: {missing}"
