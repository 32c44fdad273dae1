"""What ``pg_dump`` and ``pg_restore`` are told of a database: never its password on their
command line (other users of the machine read it), the URL's TLS mode kept."""

from __future__ import annotations

from paperclip.db.backup import Target


def test_the_password_goes_in_the_environment_never_the_command_line():
    target = Target.of("postgresql://me:s3cr%27et@db.internal:5433/pc?ssl=require")
    assert "s3cr" not in target.conninfo
    assert target.conninfo == (
        "host='db.internal' port='5433' user='me' dbname='pc' sslmode='require'"
    )
    assert target.env()["PGPASSWORD"] == "s3cr'et"


def test_the_embedded_server_is_reached_on_its_socket():
    target = Target.of("postgresql://postgres:@/paperclip?host=/var/tmp/pg%20sock")
    assert target.conninfo == "host='/var/tmp/pg sock' user='postgres' dbname='paperclip'"
    assert target.password is None
