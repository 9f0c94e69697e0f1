#!/bin/sh
# pick_python.sh: print the command of a Python that burnbook can use, and exit 0;
# print nothing and exit 1 when there is none on PATH.
# burnbook needs Taichi 1.7.4, which has wheels for CPython 3.10 to 3.13 only
# (and no release since July 2025), so `python3` is taken when it is one of
# those, else the newest of python3.13 ... python3.10 that PATH holds.
supported() {
	"$1" -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 13))' >/dev/null 2>&1
}
for candidate in python3 python3.13 python3.12 python3.11 python3.10; do
	if command -v "$candidate" >/dev/null 2>&1 && supported "$candidate"; then
		echo "$candidate"
		exit 0
	fi
done
exit 1
