"""One direction of one proxied connection: a plain copy loop, or a chain of fault stages.

A direction without faults is ``copy``: large reads, one write each, nothing else (a leg of a
long-running proxy copies in a thread, ``threadcopy.py``). A direction with faults is
``run_chain``: one task that reads the source, feeds each read to the chain of stages with the
time, polls the chain when a stage's timer is due, and writes what comes out; while a stage is
not accepting (a stall, a slow consumer) it reads nothing, so the producer feels the fault as
backpressure (a leg of a long-running proxy does this in a thread too, ``threadchain.py``,
and comes back for what only trio does). The stages are pure (``harness/faults/stage.py``):
every decision about bytes is theirs; this module only moves bytes and keeps the clock. When
the proxy's faults change while the leg runs (``plans.py``), the leg moves from copying to a
chain and rebuilds its chain on its next step.

Items become wire events in ``writer.py``: bytes, a read boundary (wait until the peer has read
everything, ``drain.py``), or an end, which ``Leg.close`` carries out: FIN, RST or half-close.
EOF from the source is forwarded as a half-close (``close_write``: a FIN, or TLS's
close_notify), so the other direction keeps working (failure catalogue case 61). Everything
written goes into the ``Timeline``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import trio

from harness.evidence.timeline import HowEnded, Timeline
from harness.evidence.timeline import Leg as TimedLeg
from harness.faults.config import Fault
from harness.faults.items import Boundary, Chunk, Close, Direction, End, Item
from harness.faults.stage import BaseStage, Chain, Stage
from harness.proxy.plans import FaultPlan, NamedFault, Waits
from harness.proxy.sockio import Endpoint
from harness.proxy.threadchain import ThreadChain
from harness.proxy.threadcopy import Ended, ThreadCopy, ThreadLegs
from harness.proxy.timer import wait_until
from harness.proxy.writer import BROKEN, Writer

StageFactory = Callable[[str, Fault], Stage]


@runtime_checkable
class Watcher(Protocol):
    """Sees one leg as it flows: every read of its source before the faults (``observe``),
    the source's end, every write to its destination after them, and how the leg ended.
    A live locator is one (``harness/link/live.py``)."""

    def observe(self, data: bytes) -> None: ...

    def observe_end(self, how: str) -> None: ...

    def observe_written(self, data: bytes) -> None: ...

    def observe_closed(self, how: str) -> None: ...


#: A stage's timer is slept to this long before it is due (reading meanwhile), and the rest
#: waited precisely, reading nothing (``timer.wait_until``): trio's sleeps end in epoll, whose
#: timeout CPython rounds up to the millisecond, so a 10 ms latency took 10.3-10.6 ms
#: (Toxiproxy's: 10.3, with half the spread).
TIMER_SLACK_S = 0.001
#: reads a leg copies in trio before it may move to a thread: a thread costs a few hundred
#: microseconds to set up (``to_thread``, an eventfd, two duplicated descriptors), which
#: doubled the time of 100,000 short connections; a leg that lives longer gains it back
THREAD_AFTER_READS = 16
#: ...or once it has carried this much (a bulk transfer, whose every read costs trio more than
#: a thread's set-up: 64-byte slicing ran 8 MiB/s in trio, 12 in a thread, and 16 reads of
#: 256 KiB were a whole 4 MiB transfer)
THREAD_AFTER_BYTES = 1 << 20
#: the most times the reads before a thread double (``_ChainRun.wants_thread``)
MAX_THREAD_BACKOFF = 8
#: how long a FIN's end waits for the peer's own close before closing anyway (``_clean_fin``)
FIN_DRAIN_S = 1.0
DRAIN_READ_BYTES = 65536


@dataclass(slots=True)
class Connection:
    """One consumer connection and its upstream connection, shared by both directions."""

    number: int
    client: Endpoint
    upstream: Endpoint
    started: float
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    #: set by the first direction that tears the whole connection down (RST, FIN, error)
    closing: bool = False
    #: bytes read from the source of each direction
    read: dict[str, int] = field(default_factory=lambda: {"downstream": 0, "upstream": 0})


@dataclass(slots=True)
class Leg:
    """One direction: its source and destination endpoints (plaintext, whether the wire is
    TCP or TLS: ``sockio.py``) and where it is recorded."""

    conn: Connection
    direction: Direction
    src: Endpoint
    dst: Endpoint
    timeline: Timeline
    read_bytes: int
    split_timeout_s: float
    plan: FaultPlan = field(default_factory=FaultPlan)
    #: makes the stage of one named fault for this leg (placement checked)
    build: StageFactory | None = None
    #: sees every read of the source before any fault does, and every write (a live locator)
    watcher: Watcher | None = None
    #: the source reset the connection (its Close("rst") is the peer's, not a fault's)
    peer_reset: bool = False
    #: how a change of the plan wakes this leg from a wait
    waits: Waits = field(default_factory=Waits)
    #: where the copy may run in a thread instead, while no fault applies (``threadcopy.py``)
    threads: ThreadLegs | None = None
    #: the leg has run in a thread before: a copy goes back to one at once (after a removed
    #: toxic, the connection's round trip is the pass-through's again from its next read)
    lived: bool = False
    _built: dict[str, tuple[Fault, Stage]] = field(default_factory=dict)
    _version: int = -1

    async def run(self) -> None:
        """Until the destination leg ends: copy while no fault applies, else run a chain, and
        copy again once the faults that applied are gone (a removed toxic costs the leg
        nothing more)."""
        self.plan.legs.add(self.waits)
        try:
            while True:
                pending: Item | None = None
                while not self.plan.for_leg(self.direction, self.conn.number):
                    self._version = self.plan.version  # (a chain builds itself on its first step)
                    ended, pending = await self.copy()
                    if ended:
                        return
                    if pending is not None:
                        break  # bytes read as the faults changed: the chain takes them
                if await self.run_chain(pending):
                    return
        finally:
            self.plan.legs.discard(self.waits)

    async def copy(self) -> tuple[bool, Item | None]:
        """The no-fault path: big reads, one write each, straight to the sockets; no digest
        either (no fault to prove). Returns ``(True, None)`` once the leg ended, or
        ``(False, item)`` when the faults changed (an item read meanwhile, or None)."""
        while True:
            outcome: tuple[bool, Item | None] | None = (False, None)  # if a change ends a wait
            with self.waits.renew() as scope:
                outcome = await self._copy_steps(scope)
            if outcome is None:  # time for a thread
                assert self.threads is not None
                ended = await self._copy_in_thread(self.threads)
                if ended is not None:
                    return ended, None
                self.threads = None  # no thread to be had: the copy goes on here
                continue
            if outcome[0] or self._version != self.plan.version:
                return outcome

    async def _copy_in_thread(self, threads: ThreadLegs) -> bool | None:
        """``copy`` in a worker thread (``threadcopy.py``); True once the leg ended, False
        when the faults changed, None if the thread could not be set up (no descriptors)."""
        try:
            copy = ThreadCopy(*self._thread_ends(), watcher=self.watcher, changed=self._changed())
        except OSError:
            return None
        ended = await self._in_thread(threads, copy)
        if ended == "changed":
            return False
        if ended in ("eof", "rst") and self.watcher is not None:
            self.watcher.observe_end(ended)
        if ended == "rst":
            self.peer_reset = True
            await self.close("rst", peer=True)
        elif ended != "stopped":
            await self.close(ended)
        return True

    async def _chain_in_thread(self, threads: ThreadLegs, run: _ChainRun) -> bool:
        """``run``'s chain in a worker thread (``threadchain.py``) until it hands the leg back;
        True once the leg ended."""
        clock = trio.lowlevel.current_clock().current_time  # (the stages' clock, as in trio)
        try:
            ends = self._thread_ends()
            thread = ThreadChain(
                *ends, run.chain, clock, watcher=self.watcher, changed=self._changed()
            )
        except OSError:
            self.threads = None  # no descriptors: the leg stays in trio
            return False
        ended = await self._in_thread(threads, thread)
        run.reads = 0
        run.source_ended |= thread.source_ended
        self.peer_reset |= thread.peer_reset
        if ended == "error":
            await self.close("error")
        if ended in ("error", "stopped"):
            return True
        if any(isinstance(item, Boundary) for item in thread.rest):
            run.boundaries += 1  # (a paced slice hands every read back: see _ChainRun)
        return await run.writer.write_all(thread.rest)  # (nothing when the faults changed)

    def _thread_ends(self) -> tuple[tuple[int, int], int, tuple[dict[str, int], str, TimedLeg]]:
        """What a thread of this leg works on: the two sockets, the read size, the counters."""
        conn, direction = self.conn, self.direction
        counters = conn.read, direction, self.timeline.leg(conn.number, direction)
        return (self.src.socket.fileno(), self.dst.socket.fileno()), self.read_bytes, counters

    def _changed(self) -> Callable[[], bool]:
        """Whether the faults changed since this leg last looked (asked from a thread)."""
        plan, version = self.plan, self._version
        return lambda: plan.version != version

    async def _in_thread(self, threads: ThreadLegs, thread: ThreadCopy) -> Ended:
        """Run ``thread`` (woken by every change of the faults), counting its writes."""
        self.lived = True
        self.plan.legs.add(thread)
        try:
            return await threads.run(thread)
        finally:
            self.plan.legs.discard(thread)  # (``run`` closed its wake-up: no ``wake`` after this)
            self.timeline.counted(self.conn.number, self.direction, thread.writes, 0)

    async def _copy_steps(self, scope: trio.CancelScope) -> tuple[bool, Item | None] | None:
        """``copy`` inside one of the leg's wait scopes (``plans.Waits``); None when the leg
        should go on in a thread (``threadcopy.py``): after ``THREAD_AFTER_READS`` reads or
        ``THREAD_AFTER_BYTES``, or at once when the leg ran in one before, with no bytes in
        hand."""
        conn, direction, plan = self.conn, self.direction, self.plan
        threads, reads = self.threads, 0
        while True:
            if self._version != plan.version:
                return False, None
            lived = self.lived or reads >= THREAD_AFTER_READS
            lived = lived or conn.read[direction] >= THREAD_AFTER_BYTES
            if threads is not None and lived and threads.available():
                return None
            reads += 1
            item = await self._read_waiting()
            if scope.cancel_called:
                return False, item  # the change came as these bytes did: they go to it
            if isinstance(item, End):
                await self.close("eof")
                return True, None
            if not isinstance(item, Chunk):
                await self.close("rst", peer=True)
                return True, None
            try:
                await self.dst.send_all(item.data)
            except BROKEN:
                await self.close("error")
                return True, None
            now = trio.current_time()
            self.timeline.wrote(now, conn.number, direction, item.data, digest=False)
            if self.watcher is not None:
                self.watcher.observe_written(item.data)

    async def run_chain(self, pending: Item | None = None) -> bool:
        """Drive the leg's chain until the destination leg ends (True; see the module
        docstring) or a change of the faults leaves it no stage and nothing in hand (False:
        the leg copies again). ``pending`` is an item read before the chain existed. A leg of
        a long-running proxy that has lived moves its chain to a thread (``threadchain.py``)
        and back."""
        run = _ChainRun(Writer(self), Chain([]), pending)
        while True:
            ended: bool | None = False  # if a change of the faults ends a wait
            with self.waits.renew() as scope:
                ended = await self._chain_steps(run, scope)
            if ended is None:
                assert self.threads is not None
                ended = await self._chain_in_thread(self.threads, run)
            if ended:
                return True
            if run.emptied:
                return False

    async def _chain_steps(self, run: _ChainRun, scope: trio.CancelScope) -> bool | None:
        """``run_chain`` inside one of the leg's wait scopes (``plans.Waits``): True once the
        leg ended, False when a change of the faults came with bytes in hand (``run.pending``)
        so that the scope must be left, None when the chain should go on in a thread."""
        chain, writer = run.chain, run.writer
        while True:
            if self._version != self.plan.version:
                items = self._rebuild(chain, trio.current_time())
                if run.pending is not None:
                    run.source_ended = not isinstance(run.pending, Chunk)
                    items += chain.pipe(run.pending, trio.current_time())
                    run.pending = None
                if await writer.write_all(items):
                    return True
                if not chain.stages and run.pending is None and not run.source_ended:
                    run.emptied = True  # every fault of the leg is gone: back to the copy
                    return False
                continue
            now = trio.current_time()
            wake = chain.wake_at
            if wake is not None and wake <= now:
                items = chain.poll(now)
                await trio.lowlevel.checkpoint()  # a busy chain must still let others run
            elif wake is not None and wake - now < TIMER_SLACK_S:
                await self._hold(wake, precise=True)  # the last stretch before a timer
                continue
            elif chain.accepting and not run.source_ended:
                carried = self.conn.read[self.direction]
                if run.wants_thread(carried) and self.threads and self.threads.available():
                    return None
                run.reads += 1
                item = await self._read_before(None if wake is None else wake - TIMER_SLACK_S)
                if item is None:
                    continue  # a timer came first
                if scope.cancel_called:
                    run.pending = item  # a change came as these bytes did: the new chain's
                    return False
                run.source_ended = not isinstance(item, Chunk)
                items = chain.pipe(item, trio.current_time())
            else:
                await self._hold(None if wake is None else wake - TIMER_SLACK_S)
                continue
            if await writer.write_all(items):
                return True

    def _rebuild(self, chain: Chain, now: float) -> list[Item]:
        """Bring ``chain`` to the plan's faults: unchanged faults keep their stage (and what it
        holds), and so does a changed fault whose stage takes the new settings (``retune``);
        what a removed or replaced stage held goes on from where that stage was, so no byte is
        lost that a fault does not drop. Returns what comes out of the chain."""
        assert self.build is not None
        self._version = self.plan.version
        wanted: list[NamedFault] = list(self.plan.for_leg(self.direction, self.conn.number))
        old = list(self._built.items())
        kept: set[str] = set()
        for name, fault in wanted:
            if name in self._built:
                was, stage = self._built[name]
                if was is fault or (isinstance(stage, BaseStage) and stage.retune(fault)):
                    kept.add(name)
        built = {
            name: (fault, self._built[name][1] if name in kept else self.build(name, fault))
            for name, fault in wanted
        }
        stages = [(name, stage) for name, (_, stage) in built.items()]
        self._built = built
        chain.stages = [stage for _, stage in stages]
        out: list[Item] = []
        for position, (name, (_, stage)) in enumerate(old):
            if name in kept:
                continue
            held = stage.release(now)
            after = next((n for n, _ in old[position + 1 :] if n in kept), None)
            start = next(i for i, (n, _) in enumerate(stages) if n == after) if after else None
            out += chain.pipe_from(len(stages) if start is None else start, held, now)
        return out

    async def _read_item(self) -> Item:
        """The next read as an item: a Chunk, End at EOF, Close("rst") when the source reset."""
        try:
            data = await self.src.read_some(self.read_bytes)
        except BROKEN:
            self.peer_reset = True
            if self.watcher is not None:
                self.watcher.observe_end("rst")
            return Close("rst")
        if self.watcher is not None:
            if not data:
                self.watcher.observe_end("eof")
            else:
                self.watcher.observe(data)
        if not data:
            return End()
        self.timeline.read(trio.current_time(), self.conn.number, self.direction, data)
        offset = self.conn.read[self.direction]
        self.conn.read[self.direction] += len(data)
        return Chunk(data, offset)

    async def _read_before(self, wake: float | None) -> Item | None:
        """The next read as an item, or None when ``wake`` came first."""
        if wake is None:
            return await self._read_waiting()
        with trio.move_on_at(wake):
            return await self._read_waiting()
        return None

    async def _read_waiting(self) -> Item:
        """The next read as an item, in a wait that a change of the faults may end (with
        ``Cancelled``, caught by the leg's wait scope: ``plans.Waits``)."""
        waits = self.waits
        waits.waiting = True
        try:
            return await self._read_item()
        finally:
            waits.waiting = False

    async def _hold(self, wake: float | None, *, precise: bool = False) -> None:
        """Read nothing until ``wake`` (a stall, a slow consumer; forever when no timer is
        due) or a change of the faults; ``precise``: to within tens of microseconds, for the
        last stretch before a timer (``timer.py``)."""
        waits = self.waits
        waits.waiting = True
        try:
            if wake is None:
                await trio.sleep_forever()
            else:
                await (wait_until(wake) if precise else trio.sleep_until(wake))
        finally:
            waits.waiting = False

    async def close(self, how: str, *, peer: bool = False) -> None:
        """Carry out an end of this direction on the destination and record how it ended.
        RST, FIN and errors end the whole connection; EOF and half-close end one direction.
        A producer that can no longer be written to (it closed) ends only the upstream
        direction: what it sent before is still on its way to the consumer, as on a network."""
        conn, dst = self.conn, self.dst
        if conn.closing:
            return  # the other direction already tore the connection down
        recorded = HowEnded.PEER_RST if peer else HowEnded(how)
        read = conn.read.get(self.direction, 0)
        self.timeline.ended(trio.current_time(), conn.number, self.direction, recorded, read)
        if self.watcher is not None:
            self.watcher.observe_closed(recorded)
        if recorded is HowEnded.ERROR and self.direction == "upstream":
            return
        if recorded in (HowEnded.RST, HowEnded.PEER_RST, HowEnded.FIN, HowEnded.ERROR):
            conn.closing = True
            conn.scope.cancel()
        try:
            if how == "rst":
                dst.reset()
                await dst.aclose()
            elif how == "fin" and self.direction == "downstream":
                await _clean_fin(dst)  # what the consumer sees is what the judge rests on
            elif how in ("fin", "error"):
                await dst.aclose()  # over TLS: close_notify first, so a FIN stays a clean end
            else:  # "eof" (source ended) and "half" (fault): half-close, keep the reverse open
                await dst.close_write()  # over TLS: close_notify, the reverse still read
        except BROKEN:
            pass  # the peer is gone already; the end is recorded


async def _clean_fin(dst: Endpoint) -> None:
    """A FIN that stays a FIN: half-close (TLS: close_notify), then read and drop what the
    peer still sends until it closes, for at most ``FIN_DRAIN_S``, then close. Closing a
    socket that holds unread bytes makes the kernel send an RST instead, and a client that
    was still sending (its request body, a WINDOW_UPDATE) then read ECONNRESET where a FIN was
    declared (httpx's ReadError for RemoteProtocolError). Shielded: the connection's scope is
    cancelled by now, and this end must still be clean."""
    with trio.CancelScope(shield=True), trio.move_on_after(FIN_DRAIN_S):
        try:
            await dst.close_write()
            while await dst.read_some(DRAIN_READ_BYTES):
                pass
        except (*BROKEN, trio.BusyResourceError):
            pass  # the peer reset, or the other direction still reads: close as it is
    await dst.aclose()


@dataclass(slots=True)
class _ChainRun:
    """What a leg's chain carries from one wait scope to the next."""

    writer: Writer
    chain: Chain
    #: an item read before the chain took it (the faults changed meanwhile)
    pending: Item | None
    source_ended: bool = False
    #: a change of the faults left the chain no stage: the leg goes back to the copy
    emptied: bool = False
    #: reads in trio since the chain last ran in a thread
    reads: int = 0
    #: times a thread handed back a read boundary: a paced slice does on every read, and a
    #: thread set up for each would cost more than it saves, so the wait for one doubles
    boundaries: int = 0

    def wants_thread(self, carried: int) -> bool:
        """Whether the chain should move to a thread before its next read, the leg having
        carried ``carried`` bytes: after ``THREAD_AFTER_READS`` reads in trio (twice as many
        for each read boundary handed back), or, while none was, after ``THREAD_AFTER_BYTES``."""
        if not self.boundaries and carried >= THREAD_AFTER_BYTES:
            return True
        return self.reads >= THREAD_AFTER_READS << min(self.boundaries, MAX_THREAD_BACKOFF)
