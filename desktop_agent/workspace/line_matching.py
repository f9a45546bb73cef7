"""Which lines of two files match: patience anchors, then :mod:`difflib` in the gaps.

``difflib.SequenceMatcher`` alone slows down badly on a long file with changes spread
through it: it looks for the longest match over the whole remaining range again after
every change, so its time grows with the file's length times the number of changes.
Patience diffing (as ``git diff --patience``) first pins the lines that occur exactly
once on each side, keeps the longest run of them in the same order, and leaves only the
short gaps between those anchors to ``SequenceMatcher``. Its time grows with the
file's length (and the gaps'), and it reads well: unique lines such as function
headers stay lined up. :mod:`~desktop_agent.workspace.diffs` makes every file diff
from these opcodes; ``bench/diff_render.py`` prints what a 10,000-line one costs.
"""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from collections.abc import Sequence

#: (tag, i1, i2, j1, j2) as ``SequenceMatcher.get_opcodes`` gives them.
Opcode = tuple[str, int, int, int, int]


def matching_blocks(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int]]:
    """Runs ``(i, j, size)`` with ``a[i:i+size] == b[j:j+size]``, in order.

    The list ends in the ``(len(a), len(b), 0)`` sentinel, as ``SequenceMatcher``'s does.
    """
    blocks: list[tuple[int, int, int]] = []
    _match(a, b, 0, len(a), 0, len(b), blocks)
    merged: list[tuple[int, int, int]] = []
    for i, j, size in blocks:
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            last = merged.pop()
            merged.append((last[0], last[1], last[2] + size))
        elif size:
            merged.append((i, j, size))
    merged.append((len(a), len(b), 0))
    return merged


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """How to turn ``a`` into ``b``: ``equal``, ``replace``, ``delete`` and ``insert`` runs."""
    codes: list[Opcode] = []
    i = j = 0
    for ai, bj, size in matching_blocks(a, b):
        tag = ""
        if i < ai and j < bj:
            tag = "replace"
        elif i < ai:
            tag = "delete"
        elif j < bj:
            tag = "insert"
        if tag:
            codes.append((tag, i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            codes.append(("equal", ai, i, bj, j))
    return codes


def group_opcodes(codes: list[Opcode], context: int = 3) -> list[list[Opcode]]:
    """The hunks of a unified diff: changes with up to ``context`` equal lines around them.

    The same grouping as ``SequenceMatcher.get_grouped_opcodes``, over any opcodes.
    """
    if not codes or all(code[0] == "equal" for code in codes):
        return []
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    gap = context + context
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > gap:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _match(a: Sequence[str], b: Sequence[str], alo: int, ahi: int, blo: int, bhi: int,
           out: list[tuple[int, int, int]]) -> None:
    """Append the matches inside ``a[alo:ahi]`` / ``b[blo:bhi]`` to ``out``, in order."""
    start_a, start_b = alo, blo
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        alo += 1
        blo += 1
    if alo > start_a:
        out.append((start_a, start_b, alo - start_a))
    tail = 0
    while ahi > alo and bhi > blo and a[ahi - 1] == b[bhi - 1]:
        ahi -= 1
        bhi -= 1
        tail += 1
    if alo < ahi and blo < bhi:
        i, j = alo, blo  # where the last run of anchors ended
        run_i = run_j = run = 0
        for ai, bj in _anchors(a, b, alo, ahi, blo, bhi):
            if run and ai == run_i + run and bj == run_j + run:
                run += 1  # the next line of the same unchanged stretch
                continue
            if run:
                out.append((run_i, run_j, run))
                i, j = run_i + run, run_j + run
            _gap(a, b, i, ai, j, bj, out)
            run_i, run_j, run = ai, bj, 1
        if run:
            out.append((run_i, run_j, run))
            i, j = run_i + run, run_j + run
        _gap(a, b, i, ahi, j, bhi, out)
    if tail:
        out.append((ahi, bhi, tail))


def _gap(a: Sequence[str], b: Sequence[str], alo: int, ahi: int, blo: int, bhi: int,
         out: list[tuple[int, int, int]]) -> None:
    """Match a gap between anchors with ``SequenceMatcher`` (the gaps are short)."""
    if alo >= ahi or blo >= bhi:
        return
    matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi])
    for i, j, size in matcher.get_matching_blocks():
        if size:
            out.append((alo + i, blo + j, size))


def _anchors(a: Sequence[str], b: Sequence[str], alo: int, ahi: int, blo: int,
             bhi: int) -> list[tuple[int, int]]:
    """Lines unique on both sides, the longest run of them in the same order on both."""
    counts_a = Counter(a[alo:ahi])
    counts_b = Counter(b[blo:bhi])
    where_b = {line: j for j, line in enumerate(b[blo:bhi], blo)
               if counts_b[line] == 1 and counts_a.get(line) == 1}
    if not where_b:
        return []
    pairs = [(i, where_b[line]) for i, line in enumerate(a[alo:ahi], alo) if line in where_b]
    later = [j for _i, j in pairs]
    if later == sorted(later):  # the usual case: nothing moved, every anchor is kept
        return pairs
    return _longest_increasing(pairs)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of ``pairs`` (sorted by ``i``) whose ``j`` also rises."""
    tails: list[int] = []  # smallest last j of a run of each length
    tail_index: list[int] = []
    previous: list[int] = []
    for index, (_, j) in enumerate(pairs):
        length = bisect.bisect_left(tails, j)
        if length == len(tails):
            tails.append(j)
            tail_index.append(index)
        else:
            tails[length] = j
            tail_index[length] = index
        previous.append(tail_index[length - 1] if length else -1)
    run: list[tuple[int, int]] = []
    index = tail_index[-1]
    while index >= 0:
        run.append(pairs[index])
        index = previous[index]
    run.reverse()
    return run
