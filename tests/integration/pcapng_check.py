#!/usr/bin/env python3
"""Reads a pcapng file strictly and prints what it holds as one JSON line.

usage: pcapng_check.py FILE

Checks every block's two length fields agree, that blocks tile the file to
its last byte, and that each Enhanced Packet Block's interface exists; exits
1 naming the offset otherwise. Prints {"interfaces": [{"name", "snaplen",
"tsresol", "filter"}], "packets": [{"interface", "ts_ns", "caplen",
"origlen", "comment"}], "application": str}. Little-endian sections only
(what spinctl capture writes).
"""
import json
import struct
import sys


def options(body, offset):
    """Yields (code, value) from `offset` in `body` until opt_endofopt."""
    while offset + 4 <= len(body):
        code, length = struct.unpack_from("<HH", body, offset)
        offset += 4
        if code == 0:
            return
        yield code, body[offset:offset + length]
        offset += (length + 3) & ~3


def main():
    data = open(sys.argv[1], "rb").read()
    out = {"interfaces": [], "packets": [], "application": ""}
    offset = 0
    while offset < len(data):
        if offset + 12 > len(data):
            sys.exit(f"truncated block header at offset {offset}")
        btype, total = struct.unpack_from("<II", data, offset)
        if total < 12 or total % 4 or offset + total > len(data):
            sys.exit(f"bad block length {total} at offset {offset}")
        (trailer,) = struct.unpack_from("<I", data, offset + total - 4)
        if trailer != total:
            sys.exit(f"block at {offset}: lengths {total} and {trailer} differ")
        body = data[offset + 8:offset + total - 4]
        if btype == 0x0A0D0D0A:
            magic, major, minor = struct.unpack_from("<IHH", body, 0)
            if magic != 0x1A2B3C4D or major != 1:
                sys.exit(f"bad section header at {offset}")
            for code, value in options(body, 16):
                if code == 4:
                    out["application"] = value.decode()
        elif btype == 1:
            link, _, snaplen = struct.unpack_from("<HHI", body, 0)
            itf = {"name": "", "snaplen": snaplen, "link": link,
                   "tsresol": 6, "filter": ""}
            for code, value in options(body, 8):
                if code == 2:
                    itf["name"] = value.decode()
                elif code == 9:
                    itf["tsresol"] = value[0]
                elif code == 11:
                    itf["filter"] = value[1:].decode()
            out["interfaces"].append(itf)
        elif btype == 6:
            ifid, hi, lo, caplen, origlen = struct.unpack_from("<IIIII", body, 0)
            if ifid >= len(out["interfaces"]):
                sys.exit(f"packet at {offset} on undescribed interface {ifid}")
            comment = ""
            for code, value in options(body, 20 + ((caplen + 3) & ~3)):
                if code == 1:
                    comment = value.decode()
            out["packets"].append({"interface": ifid, "ts_ns": hi << 32 | lo,
                                   "caplen": caplen, "origlen": origlen,
                                   "comment": comment})
        offset += total
    print(json.dumps(out))


if __name__ == "__main__":
    main()
