"""The counts that number a program's thread-pool calls per submitting task or thread (runtime.pooltasks) live no
longer than the task, the thread or the pool: a server makes tasks, and may make pools, for ever."""

import asyncio
import concurrent.futures
import gc
import threading

from openwop_cli.runtime import pooltasks


def submit_once(pool: concurrent.futures.ThreadPoolExecutor) -> str:
    return pooltasks._numbered(pool, "threads", depth=1)


def test_each_gathered_task_numbers_its_own_calls_and_its_counts_go_with_it():
    pool = concurrent.futures.ThreadPoolExecutor(1)

    async def twice() -> tuple[str, str]:
        return submit_once(pool), submit_once(pool)

    async def main() -> list[tuple[str, str]]:
        return await asyncio.gather(*(twice() for _ in range(50)))

    names = asyncio.run(main())
    assert all(first.startswith("threads 1.0 from submit_once by ") and second.startswith("threads 1.1 ")
               for first, second in names)
    assert len({first for first, _ in names}) == 50  # each task's own: `by` names it
    gc.collect()
    assert len(pool.__dict__["_wop_origins"]) == 0
    pool.shutdown()


def test_a_long_lived_thread_making_a_pool_per_request_keeps_nothing_per_pool():
    kept: list[int] = []

    def server() -> None:
        for _ in range(100):
            pool = concurrent.futures.ThreadPoolExecutor(1)
            submit_once(pool)
            pool.shutdown()
        gc.collect()
        kept.append(len(pooltasks._origin_calls[threading.current_thread()]))

    thread = threading.Thread(target=server)
    thread.start()
    thread.join()
    assert kept == [1]  # the count of pools for its one submitting function, nothing per pool
