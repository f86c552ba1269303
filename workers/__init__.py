"""The work behind the API, in three rooms.

- Here, the jobs and their plumbing: the job functions and background passes (ingest, knowledge,
  lifecycle, re-embedding, the second model), the runners that execute them (in this process, or
  on Celery workers over a broker: ``celery_app``, ``tasks``, ``queues``), the job board, the locks
  and the reconcile sweep.
- :mod:`workers.models`: the model runtimes (embedders, rerankers) the jobs call.
- :mod:`workers.documents`: the document readers (PDF, DOCX, HTML, Markdown, text) and fetching.
"""
