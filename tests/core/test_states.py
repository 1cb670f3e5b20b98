from argus.core.states import ACTIVE, TERMINAL, TRANSITIONS, TaskStatus, can_transition, is_terminal


def test_every_status_has_a_row():
    assert set(TRANSITIONS) == set(TaskStatus)


def test_terminal_statuses_never_change():
    for s in TERMINAL:
        assert TRANSITIONS[s] == frozenset()
        assert is_terminal(s)
        for t in TaskStatus:
            assert not can_transition(s, t)


def test_expected_paths():
    assert can_transition("QUEUED", "SUBMITTED")
    assert can_transition("QUEUED", "CANCELED")
    assert not can_transition("QUEUED", "RUNNING")
    assert not can_transition("QUEUED", "CANCELING")
    assert can_transition("RUNNING", "QUEUED")  # retry after NODE_LOST
    assert can_transition("CANCELING", "CANCELED")
    assert not can_transition("CANCELING", "RUNNING")
    assert ACTIVE.isdisjoint(TERMINAL)
