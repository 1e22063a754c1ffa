"""Every gpulease_status maps to its exception class; the classes carry the
status, its name and the message. No daemon needed."""

from __future__ import annotations

import pickle
import re

import pytest

import gpulease
from gpulease import errors
from gpulease._lib import ffi

from gltest import REPO


def _header_statuses() -> dict:
    """{NAME: number} of the gpulease_status enum: from gpulease.h when the
    source tree is here, else from the cffi declarations."""
    header = REPO / "include" / "gpulease" / "gpulease.h"
    if header.exists():
        text = header.read_text()
        body = re.search(r"typedef enum gpulease_status \{(.*?)\} gpulease_status;", text, re.S)
        assert body is not None
        return {m.group(1): int(m.group(2))
                for m in re.finditer(r"GPULEASE_(\w+)\s*=\s*(\d+)", body.group(1))}
    return {name[len("GPULEASE_"):]: value
            for value, name in ffi.typeof("gpulease_status").elements.items()}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def test_every_status_maps_to_its_class() -> None:
    statuses = _header_statuses()
    assert statuses["OK"] == 0 and statuses["QUOTA_EXCEEDED"] == 18 and statuses["TIMEOUT"] == 104
    assert set(errors.ERROR_CLASSES) == {v for k, v in statuses.items() if k != "OK"}
    for name, number in statuses.items():
        if name == "OK":
            continue
        cls = errors.ERROR_CLASSES[number]
        assert cls.__name__ == _camel(name), (name, cls)
        assert getattr(gpulease, cls.__name__) is cls  # exported
        assert cls.STATUS == number
        assert issubclass(cls, gpulease.GpuleaseError)
        e = gpulease.error_for(number, f"the {name.lower()} message")
        assert type(e) is cls
        assert e.status == number
        assert e.status_name == name == gpulease.status_name(number)
        assert e.message == f"the {name.lower()} message"
        assert str(e) == f"{name}: the {name.lower()} message"
        with pytest.raises(cls):
            errors.check(number)


def test_named_classes() -> None:
    g = gpulease
    assert [g.InvalidArgument.STATUS, g.Unauthorized.STATUS, g.LoadFailed.STATUS,
            g.LaunchFailed.STATUS, g.NotFound.STATUS, g.ReadFailed.STATUS,
            g.LeaseExpired.STATUS, g.CapacityExceeded.STATUS, g.Unsupported.STATUS,
            g.NoDevice.STATUS, g.Malformed.STATUS, g.TooLarge.STATUS, g.Busy.STATUS,
            g.WriteFailed.STATUS, g.Internal.STATUS, g.InvalidHandle.STATUS,
            g.MissingSeq.STATUS, g.QuotaExceeded.STATUS] == list(range(1, 19))
    assert [g.Disconnected.STATUS, g.TlsFailed.STATUS, g.ProtocolError.STATUS,
            g.NoMemory.STATUS, g.Timeout.STATUS] == list(range(100, 105))


def test_check_ok_and_messages_from_the_error_struct() -> None:
    errors.check(0)
    err = ffi.new("gpulease_error *")
    err.status = 7
    err.message = b"lease 3 has expired"
    with pytest.raises(gpulease.LeaseExpired) as info:
        errors.check(7, err)
    assert info.value.message == "lease 3 has expired"
    assert info.value.status_name == "LEASE_EXPIRED"
    assert info.value.op is None and info.value.seq is None


def test_unknown_status_is_the_base_class() -> None:
    e = gpulease.error_for(77, "from a newer daemon")
    assert type(e) is gpulease.GpuleaseError
    assert e.status == 77 and e.status_name == "UNKNOWN"


def test_builtin_bases_and_pickling() -> None:
    d = gpulease.error_for(100, "gone")
    assert isinstance(d, ConnectionError) and isinstance(d, gpulease.GpuleaseError)
    assert str(d) == "DISCONNECTED: gone"
    t = gpulease.error_for(104)
    assert isinstance(t, TimeoutError) and str(t) == "TIMEOUT"
    for e in (d, t, gpulease.error_for(16, "bad handle")):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and back.status == e.status and back.message == e.message
