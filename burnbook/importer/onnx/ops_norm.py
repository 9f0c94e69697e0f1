"""Normalisations, pooling beyond Max/Average, resizing, sampling and attention: emitters of the operator table (see `ops`)."""

from __future__ import annotations
