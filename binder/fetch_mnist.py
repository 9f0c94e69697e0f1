"""Binder's data step: make MNIST readable by the book before anyone opens it.

For each split, burnbook's own MNIST loader finds the files under the data
root (`$BURNBOOK_DATA`, else the user cache folder; see
`burnbook.data.dataset.vision.mnist`). Files already there are verified and
reused; missing ones are downloaded by `mnist.resolve`, which checks each
download's MD5 against the published sums before putting it in place.

Verifying a file means: a published file (in the `mnist/` folder, named as
published) must have the published MD5; every file must then parse as MNIST
(`load_arrays` checks the IDX header, the element type, the image size and
that images and labels belong together). A file that fails is reported with
what to do, and the build stops: it is never silently replaced.

Run from the repository root, after burnbook is installed:
`python binder/fetch_mnist.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from burnbook.data import download
from burnbook.data.dataset.vision import mnist


def verify_checksum(path: Path) -> None:
    """Raise ChecksumError naming `path` if it is a published file (in the
    `mnist/` folder, under its published name) whose MD5 is not the published one."""
    if path.parent.name == mnist.FOLDERS[0] and path.name in mnist.MD5:
        download.verify_md5(path, mnist.MD5[path.name])


def ensure(split: str) -> tuple[Path, Path, int, bool]:
    """The verified (images, labels) files of `split`, how many images they
    hold, and whether they had to be downloaded."""
    downloaded = mnist.find_folder(split) is None
    images, labels = mnist.resolve(split, download_missing=downloaded)
    for path in (images, labels):
        verify_checksum(path)
    count = len(mnist.load_arrays(images, labels)[1])
    return images, labels, count, downloaded


def main() -> int:
    root = download.data_root()
    print(f"MNIST data root: {root}")
    for split in ("train", "test"):
        try:
            images, labels, count, downloaded = ensure(split)
        except (download.ChecksumError, mnist.IdxError) as err:
            print(f"MNIST {split} split failed verification: {err}\n"
                  "Delete that file to download it again, or point BURNBOOK_DATA at a "
                  "folder holding a good copy.", file=sys.stderr)
            return 1
        except (download.DatasetNotFoundError, OSError) as err:
            print(f"MNIST {split} split is not available: {err}", file=sys.stderr)
            return 1
        how = "downloaded and verified" if downloaded else "present and verified, not downloaded"
        print(f"MNIST {split}: {count} images in {images.parent} ({how})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
