"""MNIST: reading the offline files, the folder search order, downloads with
checksums (the network replaced), and malformed IDX files."""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from burnbook.data import ChecksumError, DataFolderError, DatasetNotFoundError, MnistDataset, MnistItem, download
from burnbook.data.dataset.vision import IdxError, read_idx, write_idx
from burnbook.data.dataset.vision import mnist as mnist_module

from ..bombs import GIB, MIB, gzip_bomb, peak_rss_mb

CANONICAL = {
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}


def _fake_split(folder: Path, split: str, n: int, label: int = 3, gz: bool = True) -> None:
    """Write a tiny, valid MNIST split (n images of value `label`)."""
    folder.mkdir(parents=True, exist_ok=True)
    images_stem, labels_stem = mnist_module.FILES[split]
    suffix = ".gz" if gz else ""
    write_idx(folder / (images_stem + suffix), np.full((n, 28, 28), label, dtype=np.uint8))
    write_idx(folder / (labels_stem + suffix), np.full(n, label, dtype=np.uint8))


def test_offline_split_through_burnbook_data(offline_env):
    train, test = MnistDataset.train(), MnistDataset.test()
    assert train.len() == 8000 and test.len() == 2000
    assert train.folder == offline_env / "mnist-offline" == test.folder
    item = train[0]
    assert isinstance(item, MnistItem)
    assert item.image.dtype == np.float32 and item.image.shape == (28, 28)
    assert item.image.min() == 0.0 and item.image.max() == 255.0
    assert item.label == 7 and test[0].label == 4  # MNIST test images 0 and 8000
    assert [train[i].label for i in range(1, 5)] == [2, 1, 0, 4]
    assert train.images.shape == (8000, 28, 28) and train.images.dtype == np.uint8
    assert set(np.unique(train.labels)) == set(range(10))
    assert train.get(8000) is None and item == train[0] and item != train[1]


def test_complete_folder_wins_over_a_partial_one(tmp_path, monkeypatch, shared_data):
    """mnist/ holds only a test split: both splits come from mnist-offline/,
    never train from one release and test from another."""
    root = tmp_path / "data"
    shutil.copytree(shared_data / "mnist-offline", root / "mnist-offline")
    _fake_split(root / "mnist", "test", 5)
    monkeypatch.setenv("BURNBOOK_DATA", str(root))
    assert MnistDataset.test().len() == 2000
    assert MnistDataset.train().folder == root / "mnist-offline"
    _fake_split(root / "mnist", "train", 7, gz=False)  # now mnist/ is complete: it wins
    assert MnistDataset.train().len() == 7 and MnistDataset.test().len() == 5
    assert MnistDataset.train().folder == root / "mnist"


def test_partial_folder_serves_its_split_and_the_other_is_not_found(tmp_path, monkeypatch, shared_data):
    root = tmp_path / "data"
    shutil.copytree(shared_data / "mnist", root / "mnist")  # the canonical test split only
    monkeypatch.setenv("BURNBOOK_DATA", str(root))
    assert MnistDataset.test().len() == 10000
    with pytest.raises(DatasetNotFoundError) as info:
        MnistDataset.train()  # the no_network fixture refuses the download
    message = str(info.value)
    assert "train-images-idx3-ubyte.gz" in message and str(root / "mnist") in message
    assert str(root / "mnist-offline") in message and f"BURNBOOK_DATA={root}" in message
    assert "network access in a test" in message
    assert not list((root / "mnist").glob("*train*")) and not list((root / "mnist").glob(".*"))


def test_root_overrides_the_search(shared_data, tmp_path):
    assert MnistDataset.test(root=shared_data / "mnist").len() == 10000
    with pytest.raises(DatasetNotFoundError, match="download=False") as info:
        MnistDataset.train(root=tmp_path / "empty", download=False)
    assert "root=" in str(info.value)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG layout")
def test_user_cache_folder_when_burnbook_data_is_unset(monkeypatch, tmp_path):
    monkeypatch.delenv("BURNBOOK_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert download.data_root() == tmp_path / "cache" / "burnbook"
    assert mnist_module.candidate_folders()[0] == tmp_path / "cache" / "burnbook" / "mnist"
    with pytest.raises(DatasetNotFoundError, match="BURNBOOK_DATA is not set"):
        MnistDataset.test()
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert download.user_cache_dir() == Path.home() / ".cache" / "burnbook"


def test_md5_verifier_on_the_real_files(shared_data, tmp_path):
    for name, md5 in CANONICAL.items():
        download.verify_md5(shared_data / "mnist" / name, md5)
        assert mnist_module.MD5[name] == md5
    tampered = tmp_path / "t10k-labels-idx1-ubyte.gz"
    data = bytearray((shared_data / "mnist" / tampered.name).read_bytes())
    data[100] ^= 0xFF
    tampered.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match="t10k-labels-idx1-ubyte.gz: MD5 .* expected ec29112d"):
        download.verify_md5(tampered, CANONICAL[tampered.name])


def _serve_from(folder: Path, calls: list, corrupt: bool = False, fail_first: bool = False):
    def fake_download(url: str, dest, timeout: float = 60.0) -> None:
        calls.append(url)
        if fail_first and len(calls) == 1:
            raise OSError("mirror down")
        data = (folder / url.rsplit("/", 1)[1]).read_bytes()
        Path(dest).write_bytes(data[:-10] if corrupt else data)

    return fake_download


def test_download_verifies_and_installs_missing_files(shared_data, tmp_path, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(download, "download_file", _serve_from(shared_data / "mnist", calls, fail_first=True))
    target = tmp_path / "dl"
    test = MnistDataset.test(root=target)
    assert test.len() == 10000 and test[0].label == 7
    assert calls[0].startswith(mnist_module.MIRRORS[0]) and calls[1].startswith(mnist_module.MIRRORS[1])
    assert sorted(p.name for p in target.iterdir()) == sorted(CANONICAL)
    MnistDataset.test(root=target)  # now on disk: no second download
    assert len(calls) == 3


def test_tampered_download_is_rejected_and_not_kept(shared_data, tmp_path, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(download, "download_file", _serve_from(shared_data / "mnist", calls, corrupt=True))
    with pytest.raises(ChecksumError, match="t10k-images-idx3-ubyte.gz"):
        MnistDataset.test(root=tmp_path / "dl")
    assert len(calls) == len(mnist_module.MIRRORS)  # every mirror tried
    assert not (tmp_path / "dl").exists()  # neither the file nor the folder made for it is kept


def test_idx_reader_round_trip(tmp_path):
    for name, array in [("a.idx", np.arange(24, dtype=np.uint8).reshape(2, 3, 4)),
                        ("b.idx.gz", np.linspace(0, 1, 6, dtype=np.float32).reshape(3, 2)),
                        ("c.idx", np.array([-1, 2**20], dtype=np.int32))]:
        write_idx(tmp_path / name, array)
        back = read_idx(tmp_path / name)
        assert back.shape == array.shape
        np.testing.assert_array_equal(back, array)


@pytest.mark.parametrize("damage, message", [
    (lambda raw: b"\x01\x02" + raw[2:], "bad IDX magic number"),
    (lambda raw: raw[:2], "truncated IDX file"),
    (lambda raw: raw[:9], "truncated IDX header"),
    (lambda raw: raw[:-5], "truncated IDX data"),
    (lambda raw: raw + b"\x00" * 3, "wrong counts"),
    (lambda raw: raw[:7] + b"\x03" + raw[8:], "header promises shape \\[3, 28, 28\\]"),
])
def test_malformed_idx_files_name_the_file(tmp_path, damage, message):
    path = tmp_path / "train-images-idx3-ubyte"
    write_idx(path, np.zeros((2, 28, 28), dtype=np.uint8))
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(IdxError, match=message) as info:
        read_idx(path)
    assert str(path) in str(info.value)


def test_malformed_mnist_folders(tmp_path):
    folder = tmp_path / "m"
    _fake_split(folder, "test", 4)
    write_idx(folder / "t10k-labels-idx1-ubyte.gz", np.zeros(3, dtype=np.uint8))
    with pytest.raises(IdxError, match="holds 4 images but .* holds 3 labels"):
        MnistDataset.test(root=folder)
    write_idx(folder / "t10k-labels-idx1-ubyte.gz", np.array([0, 1, 2, 12], dtype=np.uint8))
    with pytest.raises(IdxError, match="label 12 is not a digit"):
        MnistDataset.test(root=folder)
    write_idx(folder / "t10k-images-idx3-ubyte.gz", np.zeros((4, 28, 27), dtype=np.uint8))
    with pytest.raises(IdxError, match="t10k-images-idx3-ubyte.gz: not an MNIST image file"):
        MnistDataset.test(root=folder)
    whole = bytes([0, 0, 8, 3]) + np.array([4, 28, 28], ">u4").tobytes() + bytes(4 * 784)
    (folder / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(whole)[:-8])  # no CRC trailer
    with pytest.raises(IdxError, match="damaged gzip data"):
        MnistDataset.test(root=folder)


def test_offline_mnist_through_a_data_loader_with_workers(offline_env):
    from burnbook.data import DataLoaderBuilder

    test = MnistDataset.test()

    def batcher(items):
        images = np.stack([item.image for item in items]) / 255.0
        return images.astype(np.float32), np.array([item.label for item in items])

    loader = DataLoaderBuilder(batcher).batch_size(256).shuffle(0).num_workers(2).build(test)
    batches = list(loader)
    assert len(batches) == len(loader) == 8 and batches[0][0].shape == (256, 28, 28)
    assert batches[-1][0].shape == (2000 - 7 * 256, 28, 28)
    labels = np.concatenate([b[1] for b in batches])
    np.testing.assert_array_equal(labels, test.labels[loader.order(0)])


# --- issue 13: a data root that cannot be used is a DatasetNotFoundError naming it


@pytest.mark.parametrize("download_missing", [True, False])
def test_burnbook_data_naming_a_file(tmp_path, monkeypatch, download_missing):
    not_a_folder = tmp_path / "data.txt"
    not_a_folder.write_text("notes")
    monkeypatch.setenv("BURNBOOK_DATA", str(not_a_folder))
    with pytest.raises(DataFolderError) as info:
        MnistDataset.test(download=download_missing)
    assert isinstance(info.value, DatasetNotFoundError)
    message = str(info.value)
    assert f"{not_a_folder} is a file, not a folder" in message and f"BURNBOOK_DATA={not_a_folder}" in message
    assert not_a_folder.read_text() == "notes"


def test_a_file_in_place_of_the_mnist_folder(tmp_path, monkeypatch):
    (tmp_path / "mnist").write_text("")
    monkeypatch.setenv("BURNBOOK_DATA", str(tmp_path))
    with pytest.raises(DataFolderError, match=f"{tmp_path / 'mnist'} is a file, not a folder"):
        MnistDataset.train()


def test_a_folder_that_cannot_be_written(tmp_path, monkeypatch):
    # Root may write anywhere, so the failure is injected where the download
    # creates its temporary file; what is checked is the wrapping.
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", kwargs.get("dir"))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    target = tmp_path / "ro" / "mnist"
    with pytest.raises(DataFolderError) as info:
        MnistDataset.test(root=target)
    message = str(info.value)
    assert f"into {target}" in message and "Permission denied" in message and "t10k-images" in message
    assert not (tmp_path / "ro").exists()  # the folders made for the download are gone again


def test_the_permission_check_runs_before_any_download(tmp_path, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(download, "download_file", lambda url, dest, timeout=60.0: calls.append(url))
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if str(path) == str(tmp_path) else
                        real_access(path, mode, **kw))
    with pytest.raises(DataFolderError, match=f"{tmp_path} is read-only"):
        MnistDataset.test(root=tmp_path / "mnist")
    assert calls == [] and not (tmp_path / "mnist").exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores permissions")
def test_a_read_only_folder_for_real(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(DataFolderError, match=f"{folder} is read-only"):
            MnistDataset.test(root=folder / "mnist")
    finally:
        folder.chmod(0o755)


def test_a_folder_that_cannot_be_searched(tmp_path, monkeypatch):
    # As for writing, root bypasses permissions: the refusal is injected.
    real_is_file = Path.is_file

    def is_file(path):
        if path.parent == tmp_path / "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_is_file(path)

    monkeypatch.setattr(Path, "is_file", is_file)
    with pytest.raises(DataFolderError, match=f"cannot look for MNIST's .*-images-idx3-ubyte.gz in "
                                              f"{tmp_path / 'locked'}: Permission denied"):
        MnistDataset.test(root=tmp_path / "locked")


def test_a_mistyped_data_folder_is_not_created(tmp_path, monkeypatch):
    typo = tmp_path / "shraed" / "data"
    monkeypatch.setenv("BURNBOOK_DATA", str(typo))
    with pytest.raises(DatasetNotFoundError, match="network access in a test"):
        MnistDataset.train()
    assert list(tmp_path.iterdir()) == []


# --- decompression: the IDX header bounds what is inflated


def _idx_header(code: int, dims: tuple[int, ...]) -> bytes:
    return bytes([0, 0, code, len(dims)]) + np.array(dims, ">u4").tobytes()


@pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")), reason="ru_maxrss")
def test_an_mnist_gzip_bomb_is_refused_with_little_memory(tmp_path):
    # A true MNIST header, then 2 GiB of zeros where 47 MB of pixels belong.
    folder = tmp_path / "m"
    folder.mkdir()
    bomb = folder / "train-images-idx3-ubyte.gz"
    inflated = gzip_bomb(bomb, _idx_header(0x08, (60000, 28, 28)), 2048)
    assert inflated >= 2 * GIB and bomb.stat().st_size < 3 * MIB
    write_idx(folder / "train-labels-idx1-ubyte.gz", np.zeros(60000, np.uint8))
    grown, printed = peak_rss_mb("from burnbook.data import MnistDataset", f"""
        try:
            MnistDataset.train(root={str(folder)!r})
        except ValueError as err:
            print(type(err).__name__, err)
    """)
    assert printed.startswith("IdxError") and str(bomb) in printed and "more bytes after the data" in printed
    assert grown < 200, f"peak memory grew by {grown:.0f} MiB"


def test_an_idx_header_promising_more_than_the_file_can_hold_is_refused_unread(tmp_path):
    path = tmp_path / "big.idx.gz"
    path.write_bytes(gzip.compress(_idx_header(0x0D, (1 << 16, 1 << 16)) + bytes(1000)))
    with pytest.raises(IdxError, match=r"big.idx.gz: the header promises shape \[65536, 65536\] "
                                       r"\(17,179,869,184 bytes\), more than a \d+-byte gzip file"):
        read_idx(path)


def test_mnist_refuses_headers_beyond_mnist_before_reading(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    images, labels = folder / "t10k-images-idx3-ubyte.gz", folder / "t10k-labels-idx1-ubyte.gz"
    write_idx(labels, np.zeros(4, np.uint8))
    images.write_bytes(gzip.compress(_idx_header(0x08, (1_000_000, 28, 28))))
    with pytest.raises(IdxError, match=r"promises 1,000,000 images; MNIST has at most 70,000"):
        MnistDataset.test(root=folder)
    images.write_bytes(gzip.compress(_idx_header(0x0D, (4, 28, 28))))
    with pytest.raises(IdxError, match=r"not an MNIST image file \(got >f4 of shape \[4, 28, 28\]"):
        MnistDataset.test(root=folder)
    write_idx(images, np.zeros((4, 28, 28), np.uint8))
    write_idx(labels, np.zeros((4, 1), np.uint8))
    with pytest.raises(IdxError, match=r"not an MNIST label file \(got uint8 of shape \[4, 1\], expected uint8 \[N\]"):
        MnistDataset.test(root=folder)


def test_a_gzip_idx_with_extra_data_is_refused(tmp_path):
    path = tmp_path / "x.idx.gz"
    path.write_bytes(gzip.compress(_idx_header(0x08, (3,)) + bytes(3) + b"more"))
    with pytest.raises(IdxError, match=r"x.idx.gz: more bytes after the data of shape \[3\]"):
        read_idx(path)
    path.write_bytes(gzip.compress(_idx_header(0x08, (3,)) + bytes(2)))
    with pytest.raises(IdxError, match=r"truncated IDX data: .* promises shape \[3\] \(3 bytes\) .* holds 2"):
        read_idx(path)
