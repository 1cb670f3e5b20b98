"""team model registries (issue 38): model_versions.team_id and model_aliases.team_id; numbering and aliases
unique per registry

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-09 06:00:00

Every version and alias there before is a user's own (team_id NULL): the personal unique indexes become partial
(``WHERE team_id IS NULL``, on SQLite and PostgreSQL alike), so a user's ``m:1`` and their team's ``nlp/m:1``
coexist, and a team's registry is unique per (team, name, …). On SQLite the two tables are rebuilt by batch mode
to take the foreign key; no table refers to them, so nothing cascades. A downgrade deletes the teams' versions and
aliases (there were no team registries before this revision) and restores the old indexes.
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_PERSONAL = sa.text("team_id IS NULL")
_TABLES = (("model_versions", "version"), ("model_aliases", "alias"))


def upgrade() -> None:
    for table, last in _TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("team_id", sa.Integer(), nullable=True))
            batch_op.create_foreign_key(f"fk_{table}_team_id_teams", "teams", ["team_id"], ["id"],
                                        ondelete="CASCADE")
            batch_op.drop_index(f"ix_{table}_name")
        op.create_index(f"ix_{table}_name", table, ["user_id", "name", last], unique=True,
                        sqlite_where=_PERSONAL, postgresql_where=_PERSONAL)
        op.create_index(f"ix_{table}_team_name", table, ["team_id", "name", last], unique=True)


def downgrade() -> None:
    for table, last in _TABLES:
        op.execute(sa.text(f"DELETE FROM {table} WHERE team_id IS NOT NULL"))
        op.drop_index(f"ix_{table}_team_name", table_name=table)
        op.drop_index(f"ix_{table}_name", table_name=table)
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(f"fk_{table}_team_id_teams", type_="foreignkey")
            batch_op.drop_column("team_id")
        op.create_index(f"ix_{table}_name", table, ["user_id", "name", last], unique=True)
