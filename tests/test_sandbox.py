"""The verifier sandbox (iclrbench.blocks.sandbox): verdicts, labels, throughput, and a hostile corpus that must be
contained by every layer — each hostile function gets a verdict within its limit, nothing outside the temp dir
changes, no secret reaches a result, the parent survives and no worker is left running."""
import os, socket, threading, time

import pytest

from iclrbench.blocks.sandbox import (SandboxPool, Verdict, close_default_pool, normalise_label, run_verifier,
                                      screen_source, verdict_values, with_labels)

# Tests that start sandbox workers (these, AutoIF's, and AutoIF's contract and explorer tests) share one xdist group:
# their CPU-time limits and process floods are measured without the other xdist worker's sandboxes running beside them.
pytestmark = pytest.mark.xdist_group("autoif")

T = 0.4                                            # per-call timeout of the hostile tests (s)
ROOT = os.geteuid() == 0
SECRET = "iclrbench-test-secret-7f3a"


@pytest.fixture(scope="module")
def pool():
    os.environ["ICLRBENCH_TEST_SECRET"] = SECRET  # the workers must never see it
    with SandboxPool(n_workers=2, timeout=T, max_procs=16) as p:
        yield p
    os.environ.pop("ICLRBENCH_TEST_SECRET", None)


@pytest.fixture(scope="module")
def os_only():
    "Screen and restricted builtins OFF: only the OS layer (processes, limits, privilege drop, chroot) contains."
    os.environ["ICLRBENCH_TEST_SECRET"] = SECRET
    with SandboxPool(n_workers=1, timeout=T, max_procs=8, screen=False, restricted=False) as p:
        yield p
    os.environ.pop("ICLRBENCH_TEST_SECRET", None)


def _session_members(sid: int) -> list[int]:
    "Live processes whose session id is `sid` (a worker and everything it forked share the worker's session)."
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[3]) == sid and fields[0] != "Z":
                    out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _timed(pool, src, inputs, **kw):
    t0 = time.perf_counter()
    v = pool.run(src, inputs, **kw)
    return v, time.perf_counter() - t0


# ---------------------------------------------------------------- behaviour

def test_verdicts_and_labels(pool):
    src = "import re\ndef evaluate(response):\n    return len(re.findall(r'\\w+', response)) <= 3"
    v = pool.run(src, ["one two", "one two three four", 7])
    assert [x.status for x in v] == ["ok", "ok", "exception"] and verdict_values(v) == [True, False, None]
    assert v[2].detail == "TypeError"
    lab = pool.run(src, ["a b", "a b c d e"], expected=["false", "False"])
    assert [x.status for x in lab] == ["wrong", "passed"]
    assert [x.status for x in pool.run("def evaluate(r): return 1", ["x"])] == ["invalid"]       # only bool counts
    assert [x.status for x in pool.run("def evaluate(r): return 'yes'", ["x"], expected=[True])] == ["wrong"]
    assert pool.check("def evaluate(r):\n    return True").status == "ok"
    assert pool.check("def evaluat(r):\n    return True").detail == "MissingFunction"
    assert pool.check("def evaluate(r) return True") == Verdict("exception", None, "SyntaxError")
    assert pool.check("raise ValueError('boom')") == Verdict("exception", None, "ValueError")


def test_normalise_label_and_with_labels():
    assert [normalise_label(x) for x in (True, False, "true", "True", '"false"', "FALSE", 1, 0, 2, None, "maybe")] == \
        [True, False, True, True, False, False, True, False, None, None, None]
    got = with_labels([Verdict("ok", True), Verdict("invalid"), Verdict("timeout")], ["True", True, False])
    assert [g.status for g in got] == ["passed", "wrong", "timeout"]
    with pytest.raises(ValueError, match="'expected'"):
        with_labels([Verdict("ok", True)], [True, False])


def test_one_namespace_per_function(pool):
    """A function that rebinds builtins or patches an allowed module's class leaves no trace for the next one."""
    with SandboxPool(n_workers=1, timeout=T) as one:
        evil = ("import collections\ncollections.Counter.most_common = lambda self, n=None: []\n"
                "len = lambda x: 0\nsorted = None\nhelper = 1\ndef evaluate(r):\n    return len(r) == 0")
        assert verdict_values(one.run(evil, ["abc"])) == [True]
        good = ("import collections\ndef evaluate(r):\n"
                "    return len(r) == 3 and sorted(r) == ['a', 'b', 'c'] and collections.Counter(r).most_common(1) != []")
        assert verdict_values(one.run(good, ["abc"])) == [True]
        assert one.run("def evaluate(r):\n    return helper == 1", ["x"])[0].detail == "NameError"


def test_run_many_spreads_jobs_and_keeps_order(pool):
    jobs = [(f"def evaluate(r):\n    return len(r) == {k}", ["a" * k, "b"]) for k in range(6)]
    out = pool.run_many(jobs)
    assert [verdict_values(o) for o in out] == [[True, k == 1] for k in range(6)]


def test_run_verifier_default_pool():
    v = run_verifier("def evaluate(r):\n    return r.startswith('b')", ["bee", "ant"], timeout=0.5)
    assert verdict_values(v) == [True, False]
    close_default_pool()


def test_throughput_10000_calls_under_3_seconds(pool):
    src = "import re\ndef evaluate(response):\n    return re.search('b', response) is not None"
    inputs = [f"a{i} b" for i in range(10_000)]
    pool.run(src, inputs[:10])
    t0 = time.perf_counter()
    v = pool.run(src, inputs)
    dt = time.perf_counter() - t0
    assert all(verdict_values(v)) and dt < 3.0, dt
    print(f"sandbox throughput: {len(inputs) / dt:,.0f} calls/s")


def test_bad_parameters_raise_value_error():
    for kw, name in ((dict(n_workers=0), "n_workers"), (dict(timeout=0), "timeout"), (dict(memory_mb=8), "memory_mb"),
                     (dict(max_procs=0), "max_procs")):
        with pytest.raises(ValueError, match=f"'{name}'"):
            SandboxPool(**kw)
    with SandboxPool(n_workers=1) as p:
        with pytest.raises(ValueError, match="'timeout'"):
            p.run("def evaluate(r): return True", ["x"], timeout=-1)


# ---------------------------------------------------------------- the hostile corpus, all layers on

LOOP = "def evaluate(r):\n    while True:\n        pass"
SWALLOW = ("def evaluate(r):\n    n = 0\n    while True:\n        try:\n            while True:\n                n += 1\n"
           "        except:\n            pass")
HOSTILE = {
    "infinite loop": (LOOP, {"timeout"}),
    "bare except swallows the alarm": (SWALLOW, {"timeout"}),
    "catastrophic regex": ("import re\ndef evaluate(r):\n    return re.match(r'(a+)+$', 'a' * 40 + '!') is None", {"timeout"}),
    "loop at definition": ("while True:\n    pass\ndef evaluate(r):\n    return True", {"timeout"}),
    "fork flood": ("import os\ndef evaluate(r):\n    for _ in range(50):\n        os.fork()\n    return True", {"rejected"}),
    "huge allocation": ("def evaluate(r):\n    x = 'a' * (2 ** 34)\n    return True", {"exception"}),
    "huge allocation swallowed": ("def evaluate(r):\n    while True:\n        try:\n            x = [0] * (2 ** 31)\n"
                                  "        except:\n            pass", {"timeout"}),
    "delete a file": ("import os\ndef evaluate(r):\n    os.remove(r)\n    return True", {"rejected"}),
    "open a file": ("def evaluate(r):\n    open(r, 'w').write('x')\n    return True", {"rejected"}),
    "import via builtins": ("def evaluate(r):\n    __builtins__['__import__']('os').remove(r)\n    return True", {"rejected"}),
    "socket": ("import socket\ndef evaluate(r):\n    socket.create_connection(('127.0.0.1', 9))\n    return True", {"rejected"}),
    "subprocess": ("import subprocess\ndef evaluate(r):\n    subprocess.run(['rm', r])\n    return True", {"rejected"}),
    "os.system": ("from os import system\ndef evaluate(r):\n    return system('rm ' + r) == 0", {"rejected"}),
    "environment secrets": ("import os\ndef evaluate(r):\n    return 'SECRET' in str(os.environ)", {"rejected"}),
    "class walk to object": ("def evaluate(r):\n    return ().__class__.__bases__[0].__subclasses__() == []", {"rejected"}),
    "private module attribute": ("import collections\ndef evaluate(r):\n    return collections._sys.modules is None", {"rejected"}),
    "generator frame": ("def evaluate(r):\n    g = (x for x in [1])\n    return g.gi_frame.f_back is None", {"rejected"}),
    "format string walk": ("def evaluate(r):\n    return '{0.__class__}'.format(r) == ''", {"rejected"}),
    "string.Formatter walk": ("import string\ndef evaluate(r):\n    return string.Formatter().get_field('0', [r], {}) is None",
                              {"exception"}),
    "eval": ("def evaluate(r):\n    return eval('1') == 1", {"rejected"}),
    "getattr": ("def evaluate(r):\n    return getattr(r, 'upper') is None", {"rejected"}),
    "monkeypatch builtins": ("def evaluate(r):\n    global len\n    len = lambda x: 0\n    return len(r) == 0", {"ok"}),
    "recursion bomb": ("def evaluate(r):\n    def f(n):\n        return f(n + 1)\n    return f(0)", {"exception"}),
    "nested parentheses": ("def evaluate(r):\n    return " + "(" * 5000 + "1" + ")" * 5000, {"exception", "rejected"}),
    "output flood (return)": ("def evaluate(r):\n    return 'x' * 10 ** 7", {"invalid"}),
    "output flood (print)": ("def evaluate(r):\n    for _ in range(10 ** 5):\n        print('x' * 100)\n    return True",
                             {"exception"}),
    "ctypes": ("import ctypes\ndef evaluate(r):\n    return ctypes.string_at(0) == b''", {"rejected"}),
    "raises": ("def evaluate(r):\n    raise SystemExit(0)", {"exception"}),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_corpus_contained(pool, tmp_path, name):
    src, allowed = HOSTILE[name]
    (tmp_path / "victim").mkdir()
    victim = tmp_path / "victim" / "victim.txt"
    victim.write_text("keep me")
    before = sorted(os.listdir(tmp_path))
    parent_pid = os.getpid()
    v, dt = _timed(pool, src, [str(victim), str(victim)])
    assert {x.status for x in v} <= allowed, (name, v)
    assert dt < 2 * T * len(v) + 1.0, (name, dt)          # each call within 2× its timeout (+ respawn slack)
    assert victim.read_text() == "keep me" and sorted(os.listdir(tmp_path)) == before
    assert all(SECRET not in x.detail for x in v)
    assert os.getpid() == parent_pid
    # the pool still works after every hostile call
    assert verdict_values(pool.run("def evaluate(r):\n    return True", ["x"])) == [True]


def test_each_loop_call_returns_within_twice_the_timeout(pool):
    for src in (LOOP, SWALLOW):
        for _ in range(2):
            v, dt = _timed(pool, src, ["x"])
            assert v[0].status == "timeout" and dt < 2 * T, dt


def test_no_worker_left_running():
    p = SandboxPool(n_workers=2, timeout=0.2)
    p.run_many([(SWALLOW, ["x"]), ("def evaluate(r):\n    return True", ["y"])])
    assert len(p.pids()) >= 1 and p.stats["kills"] == 1 and len(p.spawned) == 2
    pids = p.spawned
    p.close()
    time.sleep(0.05)
    assert all(not _session_members(pid) for pid in pids)


# ---------------------------------------------------------------- the OS layer alone (screen and builtins off)

def test_os_layer_contains_a_bounded_fork_flood(os_only):
    """Children sleep 1 s and exit; with max_procs=8 the flood hits RLIMIT_NPROC (root drops to an unprivileged uid of the worker's own first)."""
    flood = ("import os, time\ndef evaluate(r):\n    n = 0\n    for _ in range(40):\n        try:\n"
             "            pid = os.fork()\n        except OSError:\n            return True\n"
             "        if pid == 0:\n            time.sleep(1.0)\n            os._exit(0)\n        n += 1\n    return False")
    v = os_only.run(flood, ["x"], timeout=2.0)
    assert v[0].status == "ok" and v[0].value is True, v
    pids = os_only.spawned
    os_only.close()
    time.sleep(0.05)
    assert all(not _session_members(pid) for pid in pids)


@pytest.fixture
def os_pool():
    os.environ["ICLRBENCH_TEST_SECRET"] = SECRET
    with SandboxPool(n_workers=1, timeout=T, max_procs=8, screen=False, restricted=False) as p:
        yield p
    os.environ.pop("ICLRBENCH_TEST_SECRET", None)


def test_os_layer_environment_is_scrubbed(os_pool):
    v = os_pool.run("import os\ndef evaluate(r):\n    return 'ICLRBENCH_TEST_SECRET' not in os.environ and len(os.environ) <= 3",
                    ["x"])
    assert verdict_values(v) == [True]
    leak = os_pool.run("import os\ndef evaluate(r):\n    raise ValueError(os.environ.get('ICLRBENCH_TEST_SECRET', r))", [SECRET])
    assert leak[0].status == "exception" and SECRET not in leak[0].detail     # messages never travel


def test_os_layer_memory_limit_and_crashes(os_pool):
    v = os_pool.run("def evaluate(r):\n    x = bytearray(2 ** 31)\n    return True", ["x"])
    assert v[0].status == "exception" and v[0].detail == "MemoryError"
    crash = os_pool.run("import ctypes\ndef evaluate(r):\n    if r == 'boom':\n        ctypes.string_at(0)\n    return True",
                        ["a", "boom", "b"])
    assert [c.status for c in crash] == ["ok", "exception", "ok"]          # the segfault costs only its call
    flood = os_pool.run("import sys\ndef evaluate(r):\n    for _ in range(10 ** 5):\n        print('R 0 T' * 20)\n"
                        "    sys.stdout.flush()\n    return False", ["x"])
    assert verdict_values(flood) == [False]                                  # prints go to /dev/null


@pytest.mark.skipif(not ROOT, reason="the privilege drop, chroot and network namespace need a root parent")
def test_os_layer_files_network_and_processes_as_root(os_pool, tmp_path):
    (tmp_path / "victim").mkdir()
    victim = tmp_path / "victim" / "victim.txt"
    victim.write_text("keep me")
    for src in ("import os\ndef evaluate(r):\n    os.remove(r)\n    return True",
                "def evaluate(r):\n    open(r, 'w').write('x')\n    return True",
                "import os\ndef evaluate(r):\n    os.system('rm -f ' + r + '; touch /tmp/iclrbench-sandbox-escape')\n    return True",
                # a whole folder outside the sandbox (the victim's own, never a real one: if a layer failed, only it goes)
                "import os, shutil\ndef evaluate(r):\n    shutil.rmtree(os.path.dirname(r))\n    return True"):
        os_pool.run(src, [str(victim)])
        assert victim.read_text() == "keep me"
    assert not os.path.exists("/tmp/iclrbench-sandbox-escape")
    assert verdict_values(os_pool.run("import os\ndef evaluate(r):\n    return os.getuid() != 0 and not os.path.exists(r)",
                                      [str(victim)])) == [True]
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0)); srv.listen(1)
    port = srv.getsockname()[1]
    hits = []
    th = threading.Thread(target=lambda: hits.append(srv.accept()), daemon=True)
    th.start()
    v = os_pool.run(f"import socket\ndef evaluate(r):\n    socket.create_connection(('127.0.0.1', {port}), timeout=0.2)\n"
                    "    return True", ["x"])
    srv.close()
    assert v[0].status in ("exception", "timeout") and not hits


def test_max_timeouts_skips_the_rest_of_an_endless_function():
    with SandboxPool(n_workers=1, timeout=0.2, max_timeouts=1) as p:
        t0 = time.perf_counter()
        v = p.run(LOOP, ["a", "b", "c", "d"])
        assert [x.status for x in v] == ["timeout"] * 4 and [x.detail for x in v[1:]] == ["skipped"] * 3
        assert v[0].detail in ("alarm", "killed")       # the CPU-time alarm, or the parent's kill on a busy machine
        v = p.run(SWALLOW, ["a", "b", "c"])
        assert [x.status for x in v] == ["timeout"] * 3 and [x.detail for x in v[1:]] == ["skipped", "skipped"]
        assert time.perf_counter() - t0 < 2.0


def test_pool_works_when_the_host_holds_more_than_1024_descriptors():
    """A long-lived host (a test session, a Jupyter kernel) can hold descriptors numbered past 1024, where `select`
    raises 'filedescriptor out of range'; the pool waits with `poll`, so its workers' pipes may take any number."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 1300
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} < {need}")
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    held = []
    try:
        while not held or held[-1] < 1100:     # push the next descriptors (the workers' pipes) past 1024
            held.append(os.open(os.devnull, os.O_RDONLY))
        with SandboxPool(n_workers=2, timeout=T) as p:
            assert p.run("def evaluate(r):\n    return True", ["x"]) and min(w.fd for w in p.workers) > 1024
            v = p.run("def evaluate(r):\n    return r == 'a'", ["a", "b"])
            assert verdict_values(v) == [True, False]
            v = p.run("def evaluate(r):\n    while True: pass", ["a"])      # a timeout: kill, respawn past 1024
            assert v[0].status == "timeout"
            assert verdict_values(p.run("def evaluate(r):\n    return True", ["x"])) == [True]
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
