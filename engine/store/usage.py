"""What the engine reported per request (usage) and per turn (receipts): recorded as they
happen, summed per provider and model, and replayed for a reopened conversation."""

from __future__ import annotations

import time
from typing import Any

from engine.store.connection import StoreConnection
from engine.store.records import Receipt, UsageRecord, UsageSummary
from engine.store.rows import text_in, text_out


class UsageLedger(StoreConnection):
    """The usage and receipts tables of one open database."""

    def record_usage(
        self,
        conversation_id: str | None,
        *,
        agent: str,
        provider: str,
        model: str,
        prompt_tokens: int | None,
        completion_tokens: int | None,
        cached_tokens: int | None,
        purpose: str = "chat",
        created: float | None = None,
    ) -> None:
        """One request's usage as the engine reported it (None: not reported)."""
        with self._write() as conn:
            self._require(conn, conversation_id)
            conn.execute(
                "INSERT INTO usage (conversation_id, agent, provider, model, purpose,"
                " prompt_tokens, completion_tokens, cached_tokens, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id,
                    text_in(agent),
                    provider,
                    text_in(model),
                    purpose,
                    prompt_tokens,
                    completion_tokens,
                    cached_tokens,
                    time.time() if created is None else created,
                ),
            )

    def usage_summary(
        self,
        conversation_id: str | None = None,
        *,
        agent: str | None = None,
        by_purpose: bool = False,
    ) -> list[UsageSummary]:
        """Totals per provider and model, for one conversation or (None) for all.
        `by_purpose`: per kind of request instead ("chat", "summary", "memory"), each
        summary's `model` naming the kind and its `provider` empty."""
        where, params = [], []
        if conversation_id is not None:
            where.append("conversation_id = ?")
            params.append(conversation_id)
        if agent is not None:
            where.append("agent = ?")
            params.append(agent)
        keys = "'' AS provider, purpose AS model" if by_purpose else "provider, model"
        group = "purpose" if by_purpose else "provider, model"
        sql = (
            f"SELECT {keys}, COUNT(*) AS requests,"
            " COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens,"
            " SUM(cached_tokens) AS cached_tokens,"
            " COALESCE(SUM(completion_tokens), 0) AS completion_tokens FROM usage"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" GROUP BY {group} ORDER BY {group}"
        with self._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            UsageSummary(
                provider=r["provider"],
                model=text_out(r["model"]) or "",
                requests=r["requests"],
                prompt_tokens=r["prompt_tokens"],
                cached_tokens=r["cached_tokens"],
                completion_tokens=r["completion_tokens"],
            )
            for r in rows
        ]

    def usage_records(
        self, conversation_id: str, purpose: str | None = "chat"
    ) -> list[UsageRecord]:
        """One conversation's requests in the order they landed (`purpose` None: every kind);
        what a reopened conversation's context timeline is rebuilt from."""
        sql = (
            "SELECT purpose, prompt_tokens, completion_tokens, cached_tokens, created FROM usage"
            " WHERE conversation_id = ?"
        )
        params: list[Any] = [conversation_id]
        if purpose is not None:
            sql += " AND purpose = ?"
            params.append(purpose)
        sql += " ORDER BY created, pk"
        with self._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            UsageRecord(
                purpose=r["purpose"],
                prompt_tokens=r["prompt_tokens"],
                completion_tokens=r["completion_tokens"],
                cached_tokens=r["cached_tokens"],
                created=r["created"],
            )
            for r in rows
        ]

    def record_receipt(
        self,
        conversation_id: str | None,
        *,
        elapsed_s: float,
        prompt_tokens: int,
        completion_tokens: int,
        tokens_per_s: float,
        finished_at: float | None = None,
        cached_tokens: int | None = None,
    ) -> None:
        """One turn's receipt (the figures of its turn_end event); `cached_tokens` None:
        the engine did not say what its prompt cache served."""
        with self._write() as conn:
            self._require(conn, conversation_id)
            conn.execute(
                "INSERT INTO receipts (conversation_id, elapsed_s, prompt_tokens,"
                " completion_tokens, tokens_per_s, finished_at, cached_tokens, cache_reported)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id,
                    float(elapsed_s),
                    int(prompt_tokens),
                    int(completion_tokens),
                    float(tokens_per_s),
                    time.time() if finished_at is None else finished_at,
                    cached_tokens,
                    int(cached_tokens is not None),
                ),
            )

    def receipts(self, conversation_id: str | None = None, limit: int = 100) -> list[Receipt]:
        """The most recent receipts, oldest first."""
        sql = "SELECT * FROM receipts"
        params: list[Any] = []
        if conversation_id is not None:
            sql += " WHERE conversation_id = ?"
            params.append(conversation_id)
        sql += " ORDER BY finished_at DESC, pk DESC LIMIT ?"
        params.append(limit)
        with self._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            Receipt(
                conversation_id=r["conversation_id"],
                elapsed_s=r["elapsed_s"],
                prompt_tokens=r["prompt_tokens"],
                completion_tokens=r["completion_tokens"],
                tokens_per_s=r["tokens_per_s"],
                finished_at=r["finished_at"],
                cached_tokens=r["cached_tokens"],
                cache_reported=None if r["cache_reported"] is None else bool(r["cache_reported"]),
            )
            for r in reversed(rows)
        ]
