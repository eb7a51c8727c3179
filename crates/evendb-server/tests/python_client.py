"""Drives evendb-server with the `redis` package from PyPI, in RESP2 and
RESP3: key commands, a pipeline, and the server's own range commands.
Usage: python_client.py PORT"""

import sys

import redis

port = int(sys.argv[1])
for proto in (2, 3):
    r = redis.Redis(port=port, protocol=proto)
    assert r.ping()
    prefix = f"py{proto}:"
    assert r.set(prefix + "a", b"1")
    assert r.set(prefix + "a", b"2", nx=True) is None
    assert r.get(prefix + "a") == b"1"
    assert r.mset({prefix + "b": b"\x00\r\n", prefix + "c": b"3"})
    assert r.mget([prefix + "a", prefix + "zz", prefix + "b"]) == [b"1", None, b"\x00\r\n"]
    assert r.exists(prefix + "a", prefix + "zz") == 1
    pipe = r.pipeline(transaction=False)
    for i in range(1000):
        pipe.set(f"{prefix}p{i:04}", i)
    assert all(pipe.execute())
    cursor, flat = r.execute_command("PREFIX", prefix + "p", "LIMIT", 10, "REV")
    assert cursor == b"(" + f"{prefix}p0990".encode(), cursor
    assert flat[0] == f"{prefix}p0999".encode() and flat[1] == b"999", flat[:2]
    assert r.delete(prefix + "a", prefix + "zz") == 1
    assert r.execute_command("DELPREFIX", prefix + "p") in (b"OK", "OK", True)
    cursor, flat = r.execute_command("PREFIX", prefix + "p")
    assert flat == [], flat
    info = r.info()
    assert "redis_version" in info and "puts" in info, sorted(info)[:5]
    try:
        r.execute_command("NOSUCHCOMMAND")
        raise AssertionError("an unknown command must fail")
    except redis.ResponseError as e:
        assert "unknown command" in str(e)
    assert r.ping()
print("python client: all checks passed")
