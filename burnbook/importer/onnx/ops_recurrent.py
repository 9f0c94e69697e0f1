"""Recurrent layers (LSTM, GRU, RNN) and control flow (If, Loop, Scan): emitters of the operator table (see `ops`)."""

from __future__ import annotations
