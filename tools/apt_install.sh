#!/bin/sh
# apt_install.sh TARGET PACKAGE... : install Debian packages for `make TARGET`,
# without recommended packages. Not as root it goes through sudo, and through
# `sudo -n` where CI is set or stdin is no terminal, so that a password prompt
# never hangs a run. Whatever fails, it says so and exits 0: the tests that
# need the packages then skip, and `make test` goes on.
target=$1
shift
skipped="$target: $* not installed: the tests that need them will be skipped"

if ! command -v apt-get >/dev/null 2>&1; then
	echo "$target: no apt-get here; install $* with your package manager, or the tests that need them will be skipped"
	exit 0
fi

sudo=
if [ "$(id -u)" != 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "$target: not root and no sudo; as root run: apt-get install --no-install-recommends $*"
		echo "$skipped"
		exit 0
	fi
	if [ -n "$CI" ] || [ ! -t 0 ]; then
		sudo="sudo -n"
		if ! sudo -n true 2>/dev/null; then
			echo "$target: sudo asks for a password, and no one can answer it here (CI is set or stdin is no terminal);"
			echo "$target: run: sudo apt-get install --no-install-recommends $*"
			echo "$skipped"
			exit 0
		fi
	else
		sudo=sudo
		echo "$target: sudo may ask for your password, to install $*"
		if ! sudo -v; then
			echo "$skipped"
			exit 0
		fi
	fi
fi

echo "$target: installing $*: ${sudo:+$sudo }apt-get install --no-install-recommends"
# A failed update (offline) may still leave package lists to install from.
$sudo apt-get update -q || echo "$target: apt-get update failed; trying the package lists this machine has"
if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"; then
	echo "$skipped"
fi
exit 0
