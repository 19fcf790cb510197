"""Kubernetes resource quantities (``"1"``, ``"1000m"``, ``"1e0"``, ``"2Ki"``) as exact numbers."""

from __future__ import annotations

import math
import re
from fractions import Fraction

_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exponent>[+-]?\d+)|(?P<decimal>n|u|m|k|M|G|T|P|E)?)$"
)
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {None: 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
MAX_EXPONENT = 64
"""Decimal exponents beyond this are refused: no real quantity needs them, and 10**huge costs time."""


class QuantityError(ValueError):
    """Not a Kubernetes quantity."""


def parse_quantity(text: str) -> Fraction:
    """``text`` as an exact number: ``"1000m"`` -> 1, ``"1e0"`` -> 1, ``"500m"`` -> 1/2, ``"1Ki"`` -> 1024."""
    match = _QUANTITY.match(text) if isinstance(text, str) else None  # no spaces: the API allows none
    if match is None:
        raise QuantityError(f"{text!r} is not a Kubernetes quantity")
    value = Fraction(match["number"])
    if match["binary"]:
        value *= 2 ** _BINARY[match["binary"]]
    else:
        exponent = int(match["exponent"]) if match["exponent"] is not None else _DECIMAL[match["decimal"]]
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(f"{text!r}: exponent {exponent} is out of range")
        value *= Fraction(10) ** exponent
    return -value if match["sign"] == "-" else value


def whole_count(value: str | int | float) -> int:
    """A count of an integer resource (``nvidia.com/gpu``) as the API judges it: on its milli-value
    rounded up (``Quantity.MilliValue``, then ``% 1000 != 0`` refused), as the scheduler counts it
    (``Quantity.Value()``, rounded up). ``"1000m"`` and ``"0.9995"`` are one GPU; ``"500m"`` is refused.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError(f"{value!r} is not a Kubernetes quantity")
    try:
        exact = parse_quantity(value) if isinstance(value, str) else Fraction(value)
    except (ValueError, OverflowError) as error:  # nan, inf
        raise QuantityError(f"{value!r} is not a Kubernetes quantity") from error
    milli = math.ceil(exact * 1000)
    if milli % 1000:
        raise QuantityError(f"{value!r} is not a whole number")
    return milli // 1000
