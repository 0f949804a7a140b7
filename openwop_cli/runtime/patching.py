"""What a session patches in the program's modules beyond the HTTP adapters: the ambient sources (clock, uuid, random,
entropy: runtime.ambient, runtime.draws) and what names the pool tasks, threads and asyncio tasks that values and
calls belong to (runtime.pooltasks). Each module is patched once the program imports it; `ambient.uninstall` undoes
one install."""

from openwop_cli.runtime import ambient, draws, pooltasks


def install(values: bool = True) -> None:
    """Patch for the active session. values: the clock, uuid and random sources too (else only the naming)."""
    patches = [("multiprocessing.pool", pooltasks.patch_pool),
               ("concurrent.futures.process", pooltasks.patch_executor),
               ("concurrent.futures.thread", pooltasks.patch_thread_executor),
               ("queue", pooltasks.patch_queue), ("asyncio.base_events", pooltasks.patch_event_loop),
               ("threading", pooltasks.patch_threads)]
    if values:
        patches += [*ambient.value_patches(), ("random", draws.patch_random), ("secrets", draws.patch_secrets)]
    ambient.install_patches(patches)
