"""``hybrid-es verify --write`` never leaves a scratch object behind (issue 25, item 6): every
removal is registered before its object is made and runs, newest first, on every way out; SIGINT
and SIGTERM stop the run there, and are held while the removals run. With a stand-in engine (the
subprocess test against a real cluster is ``tests/integration/test_verify.py``)."""

from __future__ import annotations

import os
import signal
import time
from types import SimpleNamespace

import pytest

from hybrid_es.errors import ConfigurationError, EngineError
from hybrid_es.settings import Settings
from hybrid_es.verify.interrupt import VerifyInterrupted, held, interruptible
from hybrid_es.verify.scratch import INFIX, Scratch


class FakeEngine:
    """Records what it is asked to make and remove; fails where told to."""

    flavor = "elasticsearch"
    url = "http://x"

    def __init__(
        self, *, refuse_create: str = "", fail_delete: str = "", existing: tuple[str, ...] = ()
    ) -> None:
        self.made: list[str] = []
        self.deleted: list[str] = []
        self.refuse_create, self.fail_delete = refuse_create, fail_delete
        self.existing = set(existing)
        self.hidden: set[str] = set()  # exist, but not seen by index_exists (made meanwhile)

    def index_exists(self, index):  # type: ignore[no-untyped-def]
        return index in self.existing

    def create_index(self, index, body=None):  # type: ignore[no-untyped-def]
        if self.refuse_create and self.refuse_create in index:
            raise EngineError("refused", status=403)
        if index in self.existing | self.hidden:
            return False  # as calls.create_index answers resource_already_exists
        self.made.append(index)
        return True

    def delete_index(self, index):  # type: ignore[no-untyped-def]
        if self.fail_delete and self.fail_delete in index:
            raise EngineError("the cluster is read-only", status=500)
        self.deleted.append(index)

    def get_mapping(self, index):  # type: ignore[no-untyped-def]
        raise VerifyInterrupted(signal.SIGINT)  # as if the signal came here


def _scratch(engine: FakeEngine) -> Scratch:
    return Scratch(engine, Settings(), tag="t1")  # type: ignore[arg-type]


def test_scratch_names_carry_the_infix_and_the_tag():
    s = _scratch(FakeEngine())
    assert s.index == "hybrid-es-chunks-t-verify-t1-a" and INFIX in s.index
    assert s.layout.corpus_state == "hybrid-es-corpus-state-verify-t1"
    assert s.corpus.tenants == ("verify-t1-a", "verify-t1-b")


def test_an_interruption_mid_way_removes_what_was_made_newest_first():
    engine = FakeEngine()
    with pytest.raises(VerifyInterrupted), _scratch(engine) as s:
        s.create()  # both indices made, then interrupted reading the mapping
    assert engine.made == ["hybrid-es-chunks-t-verify-t1-a", "hybrid-es-corpus-state-verify-t1"]
    assert engine.deleted == list(reversed(engine.made))
    assert s.problems == []


def test_a_refused_object_is_not_removed_and_a_failed_removal_is_reported():
    engine = FakeEngine(refuse_create="corpus-state", fail_delete="chunks")
    calls: list[str] = []
    with pytest.raises(EngineError), _scratch(engine) as s:
        s.undo("role r", lambda: calls.append("role r"))
        s.create()
    # The cluster refused the corpus-state index (an answer: nothing was made, nothing to
    # remove); the chunks index was made, and its failed removal is reported without stopping
    # the others.
    assert engine.made == ["hybrid-es-chunks-t-verify-t1-a"]
    assert engine.deleted == [] and calls == ["role r"]
    assert s.made == ["index hybrid-es-chunks-t-verify-t1-a"]
    assert s.problems == ["index hybrid-es-chunks-t-verify-t1-a: the cluster is read-only"]


@pytest.mark.parametrize("seen_before", [True, False], ids=["seen before", "made meanwhile"])
def test_an_index_that_exists_already_is_neither_used_nor_removed(seen_before):
    """Before: create_index's False (the name taken) was taken for made, and the clean-up
    deleted an index that was there before the run."""
    theirs = "hybrid-es-corpus-state-verify-t1"
    engine = FakeEngine(**({"existing": (theirs,)} if seen_before else {}))
    engine.hidden = set() if seen_before else {theirs}
    engine.get_mapping = lambda index: pytest.fail(f"the run went on, using {index}")  # type: ignore[method-assign]
    with pytest.raises(ConfigurationError) as info, _scratch(engine) as s:
        s.create()
    assert theirs in info.value.message and "choose another tag" in info.value.message
    assert engine.made == ["hybrid-es-chunks-t-verify-t1-a"]  # made before the collision
    assert engine.deleted == ["hybrid-es-chunks-t-verify-t1-a"]  # only what it made
    assert s.made == ["index hybrid-es-chunks-t-verify-t1-a"] and s.problems == []


def test_an_object_whose_request_got_no_answer_is_removed():
    engine = FakeEngine()
    s = _scratch(engine)

    def timed_out() -> None:
        raise EngineError("timed out", status=None)

    with pytest.raises(EngineError):
        s.make("index maybe", timed_out, lambda: engine.deleted.append("maybe"))
    s.remove()
    assert engine.deleted == ["maybe"]


def test_a_removal_answered_404_is_not_a_problem():
    s = _scratch(FakeEngine())

    def gone() -> None:
        raise EngineError("no such role", status=404)

    s.undo("role r", gone)
    s.remove()
    assert s.problems == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_raises_where_the_run_is_and_the_handlers_come_back(signum):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with pytest.raises(VerifyInterrupted) as stopped, interruptible():
        os.kill(os.getpid(), signum)
        time.sleep(5)  # interrupted long before
    assert stopped.value.signum == signum
    assert isinstance(stopped.value, KeyboardInterrupt)
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_signal_during_the_removals_waits_for_them():
    done: list[str] = []
    with pytest.raises(VerifyInterrupted) as stopped, held():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        done.append("removed")
    assert done == ["removed"] and stopped.value.signum == signal.SIGTERM


def test_an_interruption_during_a_writing_run_removes_everything_then_raises():
    engine = FakeEngine()
    engine.get_mapping = lambda index: (os.kill(os.getpid(), signal.SIGINT), time.sleep(5))  # type: ignore[method-assign]
    from hybrid_es.verify import run

    caps = SimpleNamespace(user="someone")
    with pytest.raises(VerifyInterrupted):
        run.verify(engine, Settings(), write=True, caps=caps)  # type: ignore[arg-type]
    assert engine.made and sorted(engine.deleted) == sorted(engine.made)
