"""Checks for chapter 14, Config.

The predictions are the config rules the chapter states (an int is a float
in JSON, a float never an int, a missing key takes its default, an unknown
key is refused); the reader's classes are tried on settings the chapter
never used, and the MLP's output is recomputed in NumPy from its weights."""

from __future__ import annotations

import numpy as np

from burnbook import Distribution, Tensor, nn
from burnbook.backend import NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe
from burnbook.optim import AdamConfig

TITLE = "Config"


def _word(value, what: str) -> str:
    """An outcome the reader names: a string, or an exception class (its name)."""
    if isinstance(value, type) and issubclass(value, BaseException):
        return value.__name__
    if isinstance(value, str):
        return value.strip().strip("'\"")
    raise AnswerError(f"{what} is {describe(value)}; name it with a string (or pass the exception class)")


def _triple(answer, names: str) -> tuple:
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        raise AnswerError(f"your answer is {describe(answer)}; pass three answers: {names}")
    return tuple(answer)


def _int_or_float(answer) -> str | None:
    kind, error, equal = _triple(answer, "(the type of the loaded dropout, what with_d_model(2.0) raises, "
                                         "the comparison's result)")
    kind = _word(kind, "the type of dropout")
    if kind in ("int", "integer"):
        return "the loaded dropout is not an int: a float field takes an int and stores it as a float"
    if kind != "float":
        return f"{kind!r} is not the type the loaded dropout has (name a Python type, 'int' or 'float')"
    error = _word(error, "what with_d_model(2.0) raises")
    if error.lower() in ("none", "nothing", "no error"):
        return "with_d_model(2.0) does not pass: an int field refuses a float, which could hide a fraction"
    if error == "ConfigError":
        return ("with_d_model(2.0) raises an error, but not a ConfigError: a wrong type is refused "
                "differently from a bad value of the right type")
    if error != "TypeError":
        return f"with_d_model(2.0) does not raise {error}"
    if not isinstance(equal, (bool, np.bool_)):
        return f"the comparison's result is {describe(equal)}; pass True or False"
    if not equal:
        return "the two configs compare by value: is the default 0.1 written out different from it left out?"
    return None


def _new_field(answer) -> str | None:
    old, gelu, misspelt = _triple(answer, "(activation from the old file, activation from the gelu file, "
                                          "what the misspelt key gives)")
    old, gelu, misspelt = (_word(v, w) for v, w in ((old, "the old file's activation"),
                                                      (gelu, "the gelu file's activation"),
                                                      (misspelt, "what the misspelt key gives")))
    if old.lower() in ("error", "configerror", "keyerror", "typeerror"):
        return "the old file loads: a missing key takes the field's default"
    if old != "relu":
        return "the old file has no activation key; which value does the field then take?"
    if gelu != "gelu":
        return "the file with \"activation\": \"gelu\" loads with the value it holds"
    if misspelt in ("relu", "gelu"):
        return "the misspelt key is not ignored: an unknown key is refused, naming it"
    if misspelt in ("KeyError", "TypeError", "ValueError"):
        return f"the refusal is not a {misspelt}: config files have their own error class, which names the file"
    if misspelt != "ConfigError":
        return f"the misspelt key does not give {misspelt!r}; name the exception class"
    return None


def _refuses(build, field: str, what: str) -> str | None:
    try:
        build()
    except ValueError as err:
        if field not in str(err):
            return f"{what} is refused, but the message does not name the field {field}: {str(err)[:80]!r}"
        return None
    except Exception as err:
        return f"{what} raises {type(err).__name__}, where a ValueError naming {field} is expected"
    return f"{what} is accepted"


def _bad_setting(answer) -> str | None:
    if not isinstance(answer, type):
        raise AnswerError(f"your answer is {describe(answer)}; pass the config class MnistTrainingConfig itself")
    good = call_reader(answer, AdamConfig(), what="MnistTrainingConfig(AdamConfig())")
    for kwargs in ({"batch_size": 1, "lr": 1e-9}, {"batch_size": 4096, "lr": 3.0}):
        call_reader(lambda: answer(AdamConfig(), **kwargs), what=f"MnistTrainingConfig(AdamConfig(), {kwargs})",
                    on="(a good setting)")
    text = call_reader(good.to_json, what="to_json()")
    for build, field, what in (
            (lambda: answer(AdamConfig(), batch_size=0), "batch_size", "batch_size=0"),
            (lambda: answer(AdamConfig(), batch_size=-3), "batch_size", "batch_size=-3"),
            (lambda: answer(AdamConfig(), lr=0.0), "lr", "lr=0.0"),
            (lambda: good.with_lr(-0.1), "lr", "with_lr(-0.1)"),
            (lambda: good.with_batch_size(0), "batch_size", "with_batch_size(0)"),
            (lambda: answer.from_json(text.replace(f'"lr": {good.lr!r}', '"lr": -0.1')), "lr",
             "JSON text with \"lr\": -0.1")):
        problem = _refuses(build, field, what)
        if problem:
            return problem
    return None


def _mlp(answer) -> str | None:
    if not isinstance(answer, type):
        raise AnswerError(f"your answer is {describe(answer)}; pass the config class MlpConfig itself")
    device = NdArray.default_device()
    NdArray.seed(7)
    config = call_reader(answer, 5, 9, 2, what="MlpConfig(5, 9, 2)")
    call_reader(lambda: answer(5, 9, 2, dropout=0.3), what="MlpConfig(5, 9, 2, dropout=0.3)")
    loaded = call_reader(answer.from_json, call_reader(config.to_json, what="to_json()"), what="from_json")
    if loaded != config:
        return "a config read back from its own JSON differs from it"
    model = call_reader(config.init, device, what="init(device)", on="for MlpConfig(5, 9, 2)")
    count = call_reader(model.num_params, what="the model's num_params()")
    if count != 5 * 9 + 9 + 9 * 2 + 2:
        return f"MlpConfig(5, 9, 2).init(device) has {count} parameters, not those of two Linear layers 5 -> 9 -> 2"
    linears = [value for _, value in model.children() if isinstance(value, nn.Linear)]
    if len(linears) != 2:
        return f"the model holds {len(linears)} Linear layers as fields, where two are expected"
    x = Tensor[NdArray, 2].random([4, 5], Distribution.Normal(0.0, 1.0), device)
    (w1, b1), (w2, b2) = ((layer.weight.val().to_numpy(), layer.bias.val().to_numpy()) for layer in linears)
    expected = np.maximum(x.to_numpy() @ w1 + b1, 0.0) @ w2 + b2
    got = call_reader(lambda: model.valid()(x), what="the model's forward", on="on a [4, 5] input")
    problem = compare(got, expected, "the model's output in valid() mode", rtol=1e-4, atol=1e-5)
    if problem:
        return problem + " (Linear, ReLU, Dropout, Linear, with dropout off in valid())"
    rebuilt = call_reader(loaded.init_with, model.into_record(), what="init_with(record)")
    again = call_reader(lambda: rebuilt.valid()(x), what="the rebuilt model's forward", on="on a [4, 5] input")
    problem = compare(again, as_array(got), "the rebuilt model's output", rtol=1e-6, atol=1e-7)
    if problem:
        return problem + " (init_with must take every weight from the record)"
    return None


EXERCISES = [
    Exercise("14", 1, "Int or float?", _int_or_float,
             expects="three answers: the type name of the loaded dropout ('int' or 'float'), the exception "
                     "with_d_model(2.0) raises ('TypeError', ..., or 'none'), and the comparison's bool",
             hints=("JSON has one number type; a config decides by the field's type, and refuses what loses "
                    "information.",
                    "Configs are values: two with the same fields are equal, however they were written.")),
    Exercise("14", 2, "A new field, old files", _new_field,
             expects="three answers: the activation loaded from the old file, from the gelu file, and the "
                     "exception the misspelt key gives (a name)",
             hints=("A field with a default may be missing from a file.",
                    "A key that names no field is a typo until proven otherwise.")),
    Exercise("14", 3, "Refuse a bad setting", _bad_setting,
             expects="the config class MnistTrainingConfig with your __post_init__",
             hints=("__post_init__ runs after every construction: the constructor, with_<field> and load.",
                    "Raise ValueError with the field's name in the message; ConfigError is a ValueError too.")),
    Exercise("14", 4, "A config for your own model", _mlp,
             expects="the config class MlpConfig(d_input, d_hidden, d_output, dropout=0.0) with init and init_with",
             hints=("init builds each layer from its own config; init_with builds each from its part of the record.",
                    "Keep the layers as fields of the module (Linear, Relu, Dropout, Linear), in that order.")),
]
