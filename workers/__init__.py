"""The work behind the API: job functions and the runners that execute them (in this process, or
on Celery workers over a broker), and the model runtimes (embedders, rerankers) they call."""
