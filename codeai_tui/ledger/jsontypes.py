"""JSON as a type: what write paths accept instead of `Any`.

`JsonValue` is exactly what `json.dumps` writes and `json.loads` returns, so a payload
or receipt typed with it cannot smuggle in an object that has no JSON form.
"""

from __future__ import annotations

from typing import TypeAlias

JsonScalar: TypeAlias = None | bool | int | float | str
JsonValue: TypeAlias = "JsonScalar | list[JsonValue] | dict[str, JsonValue]"
JsonObject: TypeAlias = "dict[str, JsonValue]"
