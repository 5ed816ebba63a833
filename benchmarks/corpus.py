"""A deterministic corpus of realistic agent steps for ``benchmarks/run.py``.

One seeded generator builds a long, healthy run of a supervisor-style multi-agent
workflow whose SQL analyst is a ``create_agent`` loop (model request → tool result
turns). Each *episode* answers one business question:

* ``model`` asks for ``sql_db_list_tables`` → ``tools`` answers;
* ``model`` asks for ``sql_db_schema`` → ``tools`` answers with DDL text;
* ``model`` asks for ``sql_db_query_checker`` → ``tools`` echoes the checked query;
* ``model`` asks for ``sql_db_query`` → ``tools`` returns rows as JSON text (200 B–2 KB);
* ``model`` asks for ``fetch_rows`` → ``tools`` returns a list of row dicts;
* ``model`` answers in prose (no tool calls);
* ``supervisor``, ``analyst`` and ``writer`` post node summaries.

Everything that varies between real requests varies here too: fresh call ids,
JSON-string arguments with differing whitespace and key order, per-request noise
(``request_id``, ``timestamp``, ``duration_ms``), rows with str/int/float/None
fields, non-ASCII text (about one name in ten stored in NFD, as macOS-sourced data
often is). Queries change every turn, so a healthy run raises almost no violations.

The same payloads are exposed per class (all JSON-serialisable, so the reference
recipe ``sha256(json.dumps(payload, sort_keys=True))`` can digest them) and as the
``liveguard.Step`` list the Monitor benchmark observes.
"""

from __future__ import annotations

import json
import random
import string
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from liveguard import Step

__all__ = ["CLASSES", "Corpus", "build_corpus"]

SEED = 20240917

CLASSES: tuple[str, ...] = (
    "assistant_tool_calls",
    "assistant_answer",
    "tool_message",
    "tool_args",
    "result_rows",
    "node_summary",
)
"""Payload classes of the digest benchmark, in report order."""

_CUSTOMERS = (
    "Ada Lovelace",
    "Grace Hopper",
    "José Álvarez",
    "Zoë Müller",
    "Søren Kierkegaard",
    "Łukasz Wróbel",
    "Amélie Poulain",
    "Björn Ångström",
    "Chloé Lefèvre",
    "François Côté",
    "Nguyễn Văn An",
    "山田 太郎",
    "Иван Петров",
    "Ayşe Yılmaz",
    "Noah Smith",
    "Liam O'Brien",
    "Olivia Brown",
    "Emma Johnson",
    "Mateo García",
    "Sofía Hernández",
)
_CITIES = (
    "São Paulo",
    "Zürich",
    "Kraków",
    "Reykjavík",
    "Montréal",
    "München",
    "Málaga",
    "東京",
    "Москва",
    "İstanbul",
    "London",
    "Berlin",
    "Paris",
    "Austin",
    "Toronto",
    "Lyon",
)
_STATUSES = ("shipped", "pending", "delivered", "cancelled", "returned")
_PRODUCTS = (
    "Espresso machine",
    "Café crème beans",
    "Grinder Pro",
    "Milk frother",
    "Thé vert matcha",
    "Cold brew kit",
    "Tamper 58 mm",
    "Descaler",
    "Porta-filter",
    "Crème brûlée torch",
)
_TABLES = ("customers", "order_items", "orders", "products")
_QUESTIONS = (
    "Which {n} customers in {city} spent the most since {date}?",
    "What was the average order total for status '{status}' after {date}?",
    "List the top {n} products by revenue in {city}.",
    "How many orders were {status} between {date} and the end of the quarter?",
    "Who are the {n} newest customers from {city}?",
)
_SCHEMA = {
    "orders": (
        "CREATE TABLE orders (\n\torder_id INTEGER NOT NULL, \n\tcustomer_id INTEGER, \n"
        "\ttotal NUMERIC(10, 2), \n\tdiscount NUMERIC(4, 2), \n\tstatus VARCHAR(16), \n"
        "\tcreated_at TIMESTAMP, \n\tPRIMARY KEY (order_id)\n)\n\n/*\n3 rows from orders table:\n"
        "order_id\tcustomer_id\ttotal\tdiscount\tstatus\tcreated_at\n"
        "1\t17\t129.90\tNone\tshipped\t2024-01-03 10:12:00\n"
        "2\t4\t18.50\t0.10\tdelivered\t2024-01-03 11:40:00\n"
        "3\t9\t349.00\tNone\tpending\t2024-01-04 08:05:00\n*/"
    ),
    "customers": (
        "CREATE TABLE customers (\n\tcustomer_id INTEGER NOT NULL, \n\tname VARCHAR(80), \n"
        "\tcity VARCHAR(40), \n\tsigned_up DATE, \n\tPRIMARY KEY (customer_id)\n)\n\n/*\n"
        "3 rows from customers table:\ncustomer_id\tname\tcity\tsigned_up\n"
        "1\tAda Lovelace\tLondon\t2023-02-11\n2\tZoë Müller\tZürich\t2023-03-30\n"
        "3\tJosé Álvarez\tMálaga\t2023-05-02\n*/"
    ),
}


@dataclass
class Corpus:
    """Payloads per class (JSON-serialisable) and the Step list of the same run."""

    seed: int
    episodes: int
    payloads: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in CLASSES})
    steps: list[Step] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.payloads.values())

    def mean_json_bytes(self, cls: str) -> float:
        """Mean size of the reference JSON of one payload of ``cls``."""
        items = self.payloads[cls]
        return sum(len(json.dumps(p, sort_keys=True)) for p in items) / max(len(items), 1)


class _Gen:
    """The seeded generator; one instance builds one corpus."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.order_id = 10_000

    # -- small values ---------------------------------------------------------------------
    def text(self, pool: tuple[str, ...]) -> str:
        value = self.rng.choice(pool)
        if not value.isascii() and self.rng.random() < 0.1:
            return unicodedata.normalize("NFD", value)  # same text, decomposed
        return value

    def call_id(self) -> str:
        alphabet = string.ascii_letters + string.digits
        return "call_" + "".join(self.rng.choice(alphabet) for _ in range(24))

    def hex_id(self, n: int = 32) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))

    def date(self) -> str:
        return f"2024-{self.rng.randint(1, 12):02d}-{self.rng.randint(1, 28):02d}"

    def arguments(self, args: dict[str, Any]) -> str:
        """JSON text as models send it: whitespace and key order vary."""
        items = list(args.items())
        if self.rng.random() < 0.5:
            items.reverse()
        separators = self.rng.choice([(",", ":"), (", ", ": ")])
        return json.dumps(dict(items), separators=separators, ensure_ascii=self.rng.random() < 0.5)

    def row(self) -> dict[str, Any]:
        self.order_id += self.rng.randint(1, 7)
        hour, minute = self.rng.randint(0, 23), self.rng.randint(0, 59)
        row: dict[str, Any] = {
            "order_id": self.order_id,
            "customer": self.text(_CUSTOMERS),
            "city": self.text(_CITIES),
            "total": round(self.rng.uniform(5, 900), 2),
            "discount": self.rng.choice([None, None, 0.05, 0.1, 0.15]),
            "status": self.rng.choice(_STATUSES),
            "created_at": f"{self.date()}T{hour:02d}:{minute:02d}:00",
        }
        if self.rng.random() < 0.4:
            row["product"] = self.text(_PRODUCTS)
            row["quantity"] = self.rng.randint(1, 12)
        if self.rng.random() < 0.2:
            row["total"] = float(int(row["total"]))  # 129.0: equal to the int 129 by value
        return row

    def rows_text(self, rows: list[dict[str, Any]]) -> str:
        """Rows as a tool returns them: JSON text of 200 B to 2 KB."""
        ascii_only = self.rng.random() < 0.5
        text = json.dumps(rows, ensure_ascii=ascii_only)
        while len(text.encode()) > 2048 and len(rows) > 1:
            rows = rows[:-1]
            text = json.dumps(rows, ensure_ascii=ascii_only)
        return text

    def question(self) -> str:
        return self.rng.choice(_QUESTIONS).format(
            n=self.rng.randint(3, 20),
            city=self.text(_CITIES),
            date=self.date(),
            status=self.rng.choice(_STATUSES),
        )

    def query(self) -> str:
        cols = self.rng.sample(["order_id", "customer", "city", "total", "status", "created_at"], 4)
        where = self.rng.choice(
            [
                f"created_at >= '{self.date()}'",
                f"status = '{self.rng.choice(_STATUSES)}' AND total > {self.rng.randint(10, 500)}",
                f"city = '{self.text(_CITIES)}'",
            ]
        )
        return (
            f"SELECT {', '.join(cols)} FROM orders o JOIN customers c USING (customer_id) "
            f"WHERE {where} ORDER BY total DESC LIMIT {self.rng.randint(5, 50)}"
        )

    # -- messages -------------------------------------------------------------------------
    def request(self, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        """An OpenAI-format assistant message asking for ``calls``."""
        content = self.rng.choice(["", None, "Let me check the database."])
        return {
            "role": "assistant",
            "content": content,
            "refusal": None,
            "tool_calls": [
                {
                    "id": self.call_id(),
                    "type": "function",
                    "function": {"name": name, "arguments": self.arguments(args)},
                }
                for name, args in calls
            ],
        }

    def tool_message(self, call_id: str, name: str, content: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def build_corpus(episodes: int = 120, seed: int = SEED) -> Corpus:
    """The whole corpus; the same for the same arguments."""
    g = _Gen(seed)
    corpus = Corpus(seed=seed, episodes=episodes)
    pay, steps = corpus.payloads, corpus.steps

    def turn(name: str, args: dict[str, Any], result: Any, tool_result: Any) -> None:
        """One create_agent turn: model request, then the tool step."""
        request = g.request([(name, args)])
        call_id = request["tool_calls"][0]["id"]
        pay["assistant_tool_calls"].append(request)
        pay["tool_args"].append(args)
        steps.append(Step(node="model", output=request))
        if isinstance(tool_result, str):
            message = g.tool_message(call_id, name, tool_result)
            pay["tool_message"].append(message)
            result = message
        steps.append(Step(node="tools", tool=name, args=args, result=result))

    for episode in range(episodes):
        question = g.question()
        table = g.rng.choice(["orders", "customers"])
        query = g.query()

        turn("sql_db_list_tables", {}, None, ", ".join(_TABLES))
        turn("sql_db_schema", {"table_names": f"{table}, order_items"}, None, _SCHEMA[table])
        turn("sql_db_query_checker", {"query": query}, None, query)

        rows = [g.row() for _ in range(g.rng.randint(2, 14))]
        text = g.rows_text(rows)
        turn("sql_db_query", {"query": query, "limit": 10}, None, text)
        pay["result_rows"].append(json.loads(text))

        fetch_args: dict[str, Any] = {
            "table": "orders",
            "filters": {"status": g.rng.choice(_STATUSES), "min_total": g.rng.randint(0, 300)},
            "limit": 10,
            "offset": g.rng.randint(0, 40) * 10,
        }
        fetched = [g.row() for _ in range(g.rng.randint(1, 10))]
        pay["result_rows"].append(fetched)
        turn("fetch_rows", fetch_args, fetched, None)

        best = rows[0]
        answer = {
            "role": "assistant",
            "content": (
                f"Q{episode}: {question} — the top result is order {best['order_id']} for "
                f"{best['customer']} in {best['city']} ({best['total']} €), "
                f"{len(rows)} rows in total."
            ),
            "refusal": None,
        }
        pay["assistant_answer"].append(answer)
        steps.append(Step(node="model", output=answer))

        for node, nxt, summary in (
            ("supervisor", "analyst", f"Episode {episode}: routed “{question}” to analyst"),
            ("analyst", "writer", f"Episode {episode}: {len(rows)} rows, top {best['customer']}"),
            ("writer", "__end__", f"Episode {episode}: drafted answer to “{question}”"),
        ):
            update = {
                "node": node,
                "step": len(steps),
                "summary": summary,
                "next": nxt,
                "state": {"question": question, "episode": episode, "rows": len(rows)},
                "timestamp": f"{g.date()}T12:00:{episode % 60:02d}Z",
                "duration_ms": round(g.rng.uniform(3, 900), 1),
                "request_id": g.hex_id(),
            }
            pay["node_summary"].append(update)
            steps.append(Step(node=node, summary=summary))
    return corpus
