"""`argus notify list | add-webhook URL | add-email ADDRESS | remove ID | test ID | deliveries ID` (issue 24).

Your webhooks and e-mail addresses for your tasks' events, through the SDK (``Client.notifications``).
"""

from __future__ import annotations

import typer

from argus.cli.common import Output, console, emit, handle_errors, output_option, sdk, table, when

notify_app = typer.Typer(help="Webhooks and e-mail about your tasks: SUCCEEDED, FAILED, CANCELED, STALLED, RESUMED, "
                         "IDLE_GPU, MODEL_ALIAS.", no_args_is_help=True)


def events_option() -> list[str] | None:
    return typer.Option(None, "--events", "-e", help="events to send, comma-separated or repeated "
                        "(SUCCEEDED,FAILED,CANCELED,STALLED,RESUMED,IDLE_GPU,MODEL_ALIAS) [default: all]")


def _events(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [e.strip().upper() for v in values for e in v.split(",") if e.strip()]


def _show_created(out: dict) -> None:
    console.print(f"added channel {out['id']}: {out['kind']} {out['target']} ({', '.join(out['events'])})",
                  markup=False)
    if out.get("secret"):
        console.print("signing secret (shown only now; X-Argus-Signature is sha256=HMAC-SHA256(secret, body)):",
                      markup=False)
        console.print(out["secret"], markup=False)


@handle_errors
def notify_list(output: Output = output_option()) -> None:
    """Your channels."""
    out = sdk().notifications.list()
    if emit(out, output):
        return
    if not out:
        console.print("no notification channels; add one with `argus notify add-webhook URL` or `add-email ADDRESS`",
                      markup=False)
        return
    table(["ID", "KIND", "TARGET", "EVENTS", "ENABLED", "CREATED"],
          ((c["id"], c["kind"], c["target"], ",".join(c["events"]), "yes" if c["enabled"] else "no",
            when(c["created_at"])) for c in out), wrap=("EVENTS",))


@handle_errors
def add_webhook(url: str, events: list[str] | None = events_option(), output: Output = output_option()) -> None:
    """Send a signed JSON POST to URL (http or https) on each event; prints the signing secret once."""
    out = sdk().notifications.add_webhook(url, _events(events))
    if not emit(out, output):
        _show_created(out)


@handle_errors
def add_email(address: str, events: list[str] | None = events_option(), output: Output = output_option()) -> None:
    """E-mail ADDRESS on each event (through the server's SMTP settings)."""
    out = sdk().notifications.add_email(address, _events(events))
    if not emit(out, output):
        _show_created(out)


@handle_errors
def remove(channel_id: int) -> None:
    """Remove a channel (its notifications not delivered yet are dropped)."""
    sdk().notifications.remove(channel_id)
    console.print(f"removed channel {channel_id}", markup=False)


@handle_errors
def test(channel_id: int, output: Output = output_option()) -> None:
    """Send a TEST notification through the channel; `argus notify deliveries ID` shows how it went."""
    out = sdk().notifications.test(channel_id)
    if not emit(out, output):
        console.print(f"queued test notification {out['delivery_id']}; see `argus notify deliveries {channel_id}`",
                      markup=False)


@handle_errors
def deliveries(channel_id: int, output: Output = output_option()) -> None:
    """The channel's last 20 notifications: event, task, state, attempts, delivered, last error."""
    out = sdk().notifications.deliveries(channel_id)
    if emit(out, output):
        return
    table(["ID", "EVENT", "TASK", "STATE", "ATTEMPTS", "CREATED", "DELIVERED", "NEXT TRY", "LAST ERROR"],
          ((d["id"], d["event"], d["task_id"] or "", d["state"], d["attempts"], when(d["created_at"]),
            when(d["delivered_at"]), when(d["next_attempt_at"]) if d["state"] == "pending" else "",
            d["last_error"] or "") for d in out), wrap=("LAST ERROR",))


def register(app: typer.Typer) -> None:
    notify_app.command("list")(notify_list)
    notify_app.command("add-webhook")(add_webhook)
    notify_app.command("add-email")(add_email)
    notify_app.command("remove")(remove)
    notify_app.command("test")(test)
    notify_app.command("deliveries")(deliveries)
    app.add_typer(notify_app, name="notify")
