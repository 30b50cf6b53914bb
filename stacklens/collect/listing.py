"""What a host holds: one ``sh`` script expands the inventory's globs and describes each file.

The script (:func:`listing_script`) prints tab-separated records, path last::

    T  <tool>  <path>                        tools found: awk, gzip, python3, journalctl
    F  <size B> <mtime s> <inode> <first> <last> <glob index> <path>
    E  <glob index> <path> <error>           a matched file that cannot be read
    G  <glob index> <matched count>          one per glob, after its files

``first``/``last`` are the first and last oslo.log header timestamps (19 characters, or ``-``)
in the first and last 64 KiB of the (decompressed) file; ``last`` is ``-`` for ``.gz`` files
(finding it would mean decompressing the whole file). A file matched by two globs is listed
once, under the first. Requires a POSIX ``sh`` with GNU or busybox ``stat -c``, ``head``,
``tail``, ``grep``; all present on the Linux hosts OpenStack runs on.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from stacklens.collect.window import HEADER_ERE

__all__ = ["Listing", "RemoteFile", "listing_script", "parse_listing"]

PROBE_BYTES = 65536
_TOOLS = ("awk", "gzip", "python3", "journalctl")


@dataclass(frozen=True)
class RemoteFile:
    """One file on a host. ``size_b`` bytes on disk (compressed for .gz), ``mtime_s`` POSIX
    seconds, ``first``/``last`` header timestamps (None: none found in the probed part)."""

    path: str
    size_b: int
    mtime_s: int
    inode: int
    first: str | None
    last: str | None
    glob: int

    @property
    def gz(self) -> bool:
        """Whether the file is gzip-compressed (by name, as logrotate names them)."""
        return self.path.endswith(".gz")


@dataclass
class Listing:
    """A parsed listing: tools by name, files, per-glob match counts, unreadable files."""

    tools: dict[str, str] = field(default_factory=dict)
    files: list[RemoteFile] = field(default_factory=list)
    matched: dict[int, int] = field(default_factory=dict)
    errors: list[tuple[int, str, str]] = field(default_factory=list)


def listing_script(globs: list[str]) -> str:
    """The ``sh`` script listing ``globs`` (already validated: no shell syntax in them)."""
    re_ = shlex.quote(HEADER_ERE)
    lines = [
        "LC_ALL=C; export LC_ALL",
        f"for t in {' '.join(_TOOLS)}; do "
        "p=$(command -v $t 2>/dev/null) && printf 'T\\t%s\\t%s\\n' \"$t\" \"$p\"; done",
        "seen=' '",
        "i=0",
    ]
    for g in globs:
        # the glob is quoted for the loop list and expanded by the unquoted $g inside
        lines.append(f"g={shlex.quote(g)}")
        lines.append(
            "n=0; for f in $g; do [ -f \"$f\" ] || continue; n=$((n+1)); "
            "case \"$seen\" in *\" $f \"*) continue;; esac; seen=\"$seen$f \"; "
            "if [ ! -r \"$f\" ]; then printf 'E\\t%s\\t%s\\tpermission denied\\n' $i \"$f\"; "
            "continue; fi; "
            "s=$(stat -L -c '%s\t%Y\t%i' \"$f\" 2>/dev/null) || { "
            "printf 'E\\t%s\\t%s\\tstat failed\\n' $i \"$f\"; continue; }; "
            "case \"$f\" in *.gz) "
            f"a=$(gzip -dc \"$f\" 2>/dev/null | head -c {PROBE_BYTES} | grep -a -m1 -E {re_} "
            "| cut -c1-19); b=;; *) "
            f"a=$(head -c {PROBE_BYTES} \"$f\" | grep -a -m1 -E {re_} | cut -c1-19); "
            f"b=$(tail -c {PROBE_BYTES} \"$f\" | grep -a -E {re_} | tail -n1 | cut -c1-19);; esac; "
            "printf 'F\\t%s\\t%s\\t%s\\t%s\\t%s\\n' \"$s\" \"${a:--}\" \"${b:--}\" $i \"$f\"; done; "
            "printf 'G\\t%s\\t%s\\n' $i $n; i=$((i+1))"
        )
    return "\n".join(lines) + "\n"


def parse_listing(out: bytes) -> Listing:
    """Parse the script's stdout; malformed lines are ignored (a file name with a newline)."""
    res = Listing()
    for raw in out.decode("utf-8", "replace").splitlines():
        p = raw.split("\t")
        try:
            if p[0] == "T" and len(p) == 3:
                res.tools[p[1]] = p[2]
            elif p[0] == "F" and len(p) >= 8:
                res.files.append(RemoteFile(
                    path="\t".join(p[7:]), size_b=int(p[1]), mtime_s=int(p[2]), inode=int(p[3]),
                    first=None if p[4] == "-" else p[4], last=None if p[5] == "-" else p[5],
                    glob=int(p[6]),
                ))
            elif p[0] == "E" and len(p) >= 4:
                res.errors.append((int(p[1]), p[2], "\t".join(p[3:])))
            elif p[0] == "G" and len(p) == 3:
                res.matched[int(p[1])] = int(p[2])
        except ValueError:
            continue
    return res
