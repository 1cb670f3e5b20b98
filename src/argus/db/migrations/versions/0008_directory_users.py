"""users.directory: a user who signs in with the LDAP directory (issue 26)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27 12:00:00

A plain ADD COLUMN with a server default (false for every existing user: they stay local), not a
batch rebuild: SQLite rebuilds a table by dropping it, and dropping ``users`` would cascade into
every table that refers to it.
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("users", sa.Column("directory", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    op.drop_column("users", "directory")  # SQLite ≥ 3.35 drops a column in place (no rebuild, no cascade)
