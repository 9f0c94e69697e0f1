"""Records and recorders: saving and loading state, as Burn's `record` module.

    from burnbook.record import Record, ParamRecord, NamedMpkFileRecorder, FullPrecisionSettings

    record = Record({"linear": {"weight": ParamRecord("w0", TensorData.from_numpy(w))}}, epoch=3)
    recorder = NamedMpkFileRecorder(FullPrecisionSettings)
    recorder.record(record, "model")          # model.mpk
    assert recorder.load("model") == record

`base` defines the record types, `precision` the precision settings, `codec`
the file formats, `checksum` their checksum and `recorder` the recorders.
No format ever uses pickle.
"""

from .base import DTYPES, ParamRecord, Record, RecordError
from .precision import (
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    PrecisionSettings,
)
from .recorder import (
    BinBytesRecorder,
    BinFileRecorder,
    BinGzFileRecorder,
    CompactRecorder,
    DefaultFileRecorder,
    DefaultRecorder,
    FileRecorder,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    Recorder,
)

__all__ = [
    "Record", "ParamRecord", "RecordError", "DTYPES",
    "PrecisionSettings", "FullPrecisionSettings", "HalfPrecisionSettings", "DoublePrecisionSettings",
    "Recorder", "FileRecorder", "NamedMpkFileRecorder", "NamedMpkGzFileRecorder", "BinFileRecorder",
    "BinGzFileRecorder", "JsonGzFileRecorder", "PrettyJsonFileRecorder", "BinBytesRecorder",
    "DefaultFileRecorder", "DefaultRecorder", "CompactRecorder",
]
