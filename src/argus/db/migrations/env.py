"""Alembic environment: runs against the connection handed in by ``db.session.migrate``."""

from alembic import context

from argus.db.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
