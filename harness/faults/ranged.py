"""What the faults over one known range of the stream share (a frame, a length field, the bytes
from a position): the range comes from the locator, maybe only once a live stream has shown it;
until then the stage holds what it is given, in order."""

from __future__ import annotations

from harness.errors import PositionError
from harness.faults.items import Item, is_final
from harness.faults.stage import BaseStage, StageContext, record_unreached


class RangedStage(BaseStage):
    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self._range: tuple[int, int] | None = None
        self._pending: list[Item] = []
        self._over = False

    def resolve(self) -> tuple[int, int] | None:
        """``[start, end)`` of the range; None while the stream has not shown it."""
        raise NotImplementedError

    def take(self, item: Item, now: float, start: int, end: int) -> list[Item]:
        """One item, once the range is known."""
        raise NotImplementedError

    def pipe(self, item: Item, now: float) -> list[Item]:
        if self._over:
            return [item]
        if self._range is None:
            try:
                self._range = self.resolve()
            except PositionError as err:  # the live stream will never have it
                self._over = True
                record_unreached(self.ctx, self, err, now)
                held, self._pending = [*self._pending, item], []
                return held
            if self._range is None:
                if is_final(item):  # the stream ended first: nothing more will come
                    held, self._pending = [*self._pending, item], []
                    return held
                self._pending.append(item)
                return []
        items, self._pending = [*self._pending, item], []
        out: list[Item] = []
        for each in items:
            out += self.take(each, now, *self._range)
        return out

    def release(self, now: float) -> list[Item]:
        held, self._pending = self._pending, []
        return held
