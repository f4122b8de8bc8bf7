"""Property tests: random goal graphs checked against networkx as the oracle."""

from __future__ import annotations

import asyncio
import itertools

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from soothe.engine.context import ContextEngine, CycleError

SETTINGS = settings(max_examples=60, deadline=None)

pairs = st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=30)


@SETTINGS
@given(n=st.integers(2, 10), edges=pairs, priorities=st.lists(st.integers(0, 100), min_size=10))
def test_dependency_cycles_match_networkx(
    n: int, edges: list[tuple[int, int]], priorities: list[int]
) -> None:
    async def scenario() -> None:
        engine = await ContextEngine.open(":memory:")
        try:
            ids = [(await engine.create_goal(f"g{i}", priority=priorities[i])).id for i in range(n)]
            oracle = nx.DiGraph()
            oracle.add_nodes_from(ids)
            for i, j in edges:
                if i >= n or j >= n:
                    continue
                src, dst = ids[i], ids[j]
                closes = src == dst or nx.has_path(oracle, dst, src)
                try:
                    await engine.add_dependency(src, dst)
                except CycleError as exc:
                    assert closes
                    cycle = exc.cycle
                    assert cycle[0] == cycle[-1] == src
                    probe = oracle.copy()
                    probe.add_edge(src, dst)
                    assert all(probe.has_edge(a, b) for a, b in itertools.pairwise(cycle))
                else:
                    assert not closes
                    oracle.add_edge(src, dst)
            assert nx.is_directed_acyclic_graph(oracle)
            for gid in ids:
                assert set(engine.get_goal(gid).depends_on) == set(oracle.successors(gid))
        finally:
            await engine.close()

    asyncio.run(scenario())


def _oracle_ready(engine: ContextEngine, oracle: nx.DiGraph, conflicts: nx.Graph) -> list[str]:
    status = {g.id: g.status for g in engine.list_goals()}
    ready = [
        gid
        for gid in oracle.nodes
        if status[gid] == "pending"
        and all(status[d] == "completed" for d in oracle.successors(gid))
        and all(status[c] != "active" for c in conflicts.neighbors(gid))
    ]
    goals = {g.id: g for g in engine.list_goals()}
    return sorted(ready, key=lambda gid: (-goals[gid].priority, goals[gid].seq))


@SETTINGS
@given(
    n=st.integers(2, 10),
    edges=pairs,
    conflict_pairs=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=6),
    priorities=st.lists(st.integers(0, 100), min_size=10),
    picks=st.lists(st.integers(0, 1000), min_size=40, max_size=40),
)
def test_ready_sets_and_topological_order(
    n: int,
    edges: list[tuple[int, int]],
    conflict_pairs: list[tuple[int, int]],
    priorities: list[int],
    picks: list[int],
) -> None:
    async def scenario() -> None:
        engine = await ContextEngine.open(":memory:")
        try:
            # Edges point from a later goal to an earlier one: always a DAG.
            deps = {i: sorted({j for a, j in edges if a == i and j < i}) for i in range(n)}
            ids: list[str] = []
            for i in range(n):
                goal = await engine.create_goal(
                    f"g{i}", priority=priorities[i], depends_on=[ids[j] for j in deps[i]]
                )
                ids.append(goal.id)
            oracle = nx.DiGraph()
            oracle.add_nodes_from(ids)
            oracle.add_edges_from((ids[i], ids[j]) for i in range(n) for j in deps[i])
            conflicts = nx.Graph()
            conflicts.add_nodes_from(ids)
            for a, b in conflict_pairs:
                if a < n and b < n and a != b:
                    await engine.add_conflict(ids[a], ids[b])
                    conflicts.add_edge(ids[a], ids[b])

            finished: list[str] = []
            active: list[str] = []
            for pick in picks:
                ready = [g.id for g in engine.ready_goals()]
                assert ready == _oracle_ready(engine, oracle, conflicts)
                # claim_goal agrees with the ready set for an arbitrary goal
                probe = ids[pick % n]
                claimed = await engine.claim_goal(probe)
                assert (claimed is not None) == (probe in ready)
                if claimed is not None:
                    active.append(probe)
                if active and pick % 3 == 0:
                    done = active.pop(0)
                    await engine.complete_goal(done)
                    finished.append(done)
            # drain: always take the best ready goal
            while active or engine.ready_goals():
                if active:
                    done = active.pop(0)
                else:
                    done = engine.ready_goals()[0].id
                    await engine.activate_goal(done)
                await engine.complete_goal(done)
                finished.append(done)
            assert sorted(finished) == sorted(ids)
            position = {gid: k for k, gid in enumerate(finished)}
            # every goal finished after everything it depends on: a topological order
            assert all(position[dep] < position[g] for g, dep in oracle.edges)
            order = list(reversed(finished))
            assert nx.is_directed_acyclic_graph(oracle)
            assert all(order.index(g) < order.index(d) for g, d in oracle.edges)
        finally:
            await engine.close()

    asyncio.run(scenario())
