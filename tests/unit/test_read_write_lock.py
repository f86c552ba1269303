"""The index's lock: readers together, a writer alone, and a waiting writer ahead of new readers."""

from __future__ import annotations

import threading

from hivemem.read_write_lock import ReadWriteLock


def test_readers_hold_the_lock_together() -> None:
    lock = ReadWriteLock()
    inside = threading.Barrier(3, timeout=10)  # passes only when three readers are inside at once

    def read() -> None:
        with lock.reading():
            inside.wait()

    threads = [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not inside.broken and not any(t.is_alive() for t in threads)


def test_a_writer_waits_for_the_readers_and_new_readers_wait_for_it() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    reader_in, release_reader = threading.Event(), threading.Event()

    def first_reader() -> None:
        with lock.reading():
            reader_in.set()
            release_reader.wait(10)
            order.append("reader done")

    def writer() -> None:
        with lock.writing():
            order.append("writer")

    def late_reader() -> None:
        with lock.reading():
            order.append("late reader")

    threads = [threading.Thread(target=first_reader)]
    threads[0].start()
    reader_in.wait(10)
    threads.append(threading.Thread(target=writer))
    threads[1].start()
    while lock._writers_waiting == 0:  # the writer is queued behind the reader
        threading.Event().wait(0.001)
    threads.append(threading.Thread(target=late_reader))
    threads[2].start()
    release_reader.set()
    for thread in threads:
        thread.join(timeout=10)
    assert order == ["reader done", "writer", "late reader"]


def test_a_failure_inside_releases_the_lock() -> None:
    lock = ReadWriteLock()
    for hold in (lock.reading, lock.writing):
        try:
            with hold():
                raise RuntimeError("inside")
        except RuntimeError:
            pass
    with lock.writing():
        pass
    with lock.reading():
        pass
