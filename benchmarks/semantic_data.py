"""The paraphrase benchmark's runs: reworded loops and progressing look-alikes.

Every loop round says the same thing in other words (no new number, name or content);
every look-alike round shares the vocabulary of the one before but moves forward. Each
family has six instances: the even ones (0, 2, 4) are the development split
(thresholds were tuned on them only), the odd ones (1, 3, 5) the test split (reported).
``plain_progress`` moves forward in plain words only (no number, identifier or name).

A run is a list of ``(node, text)`` message steps; loops interleave the counterpart's
messages as a real exchange would.
"""

from __future__ import annotations

Run = list[tuple[str, str]]

LOOPS: dict[str, list[Run]] = {
    "review_ping_pong": [
        [
            ("coder", "Here is add(): def add(a, b): return a - b"),
            ("reviewer", "add() returns a minus b; it should return their sum. Please fix the operator."),
            ("coder", "Updated add() as requested, please take another look."),
            ("reviewer", "The function still subtracts instead of adding. Change the minus to a plus."),
            ("coder", "I revised add(); could you review it again?"),
            ("reviewer", "This still computes a - b rather than a + b. The operator needs to be a"
             " plus sign."),
            ("coder", "Pushed another revision of add() for your review."),
            ("reviewer", "Same problem as before: add() subtracts. It must add the two arguments."),
        ],
        [
            ("coder", "Implemented parse_date() for the importer."),
            ("reviewer", "parse_date() ignores the timezone, so every timestamp ends up in local time."
             " Please keep the offset."),
            ("coder", "Fixed parse_date(), ready for review."),
            ("reviewer", "Timestamps are still converted to local time; the UTC offset gets dropped"
             " by parse_date()."),
            ("coder", "Another pass on parse_date() is up."),
            ("reviewer", "The offset is still lost: parse_date() turns everything into local time."),
            ("coder", "parse_date() updated again, please re-review."),
            ("reviewer", "As before, the time zone is discarded and dates come out in local time."
             " Preserve the offset."),
        ],
        [
            ("writer", "Draft of the release note is ready."),
            ("editor", "The note is too technical for customers; drop the internal jargon and explain"
             " the benefit."),
            ("writer", "Revised the release note."),
            ("editor", "It still reads like an engineering log. Customers need the benefit in plain"
             " words, not our internal terms."),
            ("writer", "New revision of the note attached."),
            ("editor", "Still full of jargon. Please rewrite it for a customer audience and say what"
             " they gain."),
            ("writer", "Here is the note again with changes."),
            ("editor", "This version is as technical as the last one; plain language and the customer"
             " benefit, please."),
        ],
        [
            ("coder", "Added the retry wrapper around fetch_orders()."),
            ("reviewer", "The retry loop has no backoff, so it hammers the API. Add exponential backoff"
             " between attempts."),
            ("coder", "Retry wrapper updated."),
            ("reviewer", "There is still no delay between retries; the loop will flood the API."
             " Please back off exponentially."),
            ("coder", "Made changes to the retry wrapper."),
            ("reviewer", "Retries still fire immediately one after another. Exponential backoff is"
             " required."),
            ("coder", "Retry logic revised once more."),
            ("reviewer", "No backoff yet: attempts run back to back and will overload the service."),
        ],
        [
            ("coder", "Wrote the SQL query for the monthly report."),
            ("reviewer", "The query builds the SQL by string concatenation, which allows injection."
             " Use bound parameters."),
            ("coder", "Query updated, please check."),
            ("reviewer", "User input is still pasted straight into the SQL string; switch to"
             " parameterised queries."),
            ("coder", "Another version of the query is ready."),
            ("reviewer", "Still vulnerable to injection: the values go into the query text instead"
             " of being passed as parameters."),
            ("coder", "Revised the report query again."),
            ("reviewer", "The SQL is still assembled from raw input. Bind the parameters."),
        ],
        [
            ("designer", "Here is the new signup page mockup."),
            ("critic", "The call to action is hard to find; the signup button blends into the"
             " background. Make it stand out."),
            ("designer", "Updated the mockup."),
            ("critic", "The signup button still gets lost against the background. It needs more"
             " contrast."),
            ("designer", "New mockup uploaded."),
            ("critic", "I still can't spot the signup button quickly; give it a colour that"
             " stands out."),
            ("designer", "Mockup revised once more."),
            ("critic", "Same issue: the button disappears into the page. Make the call to action"
             " prominent."),
        ],
    ],
    "restated_plan": [
        [
            ("planner", "Plan: first gather the Q3 sales data, then clean it, then build the regional"
             " summary."),
            ("worker", "Waiting for the data source."),
            ("planner", "Here is the approach: collect Q3 sales figures, tidy them, and produce a"
             " summary by region."),
            ("worker", "Still waiting on the data source."),
            ("planner", "My plan is to pull the Q3 sales, clean the records and then summarise them"
             " per region."),
            ("worker", "No data source yet."),
            ("planner", "To restate: obtain the Q3 sales numbers, clean them up, then write the"
             " per-region summary."),
        ],
        [
            ("planner", "I will migrate the users table to the new schema, backfill the missing"
             " emails, and then switch reads over."),
            ("planner", "The plan: move the users table onto the new schema, fill in absent email"
             " addresses, then cut reads over."),
            ("planner", "Next I intend to port users to the new schema, backfill emails that are"
             " missing, and finally redirect reads."),
            ("planner", "Approach: users table to new schema, backfill missing emails, then move the"
             " reads across."),
        ],
        [
            ("orchestrator", "We should ask the researcher for sources, have the analyst check them,"
             " and let the writer draft the report."),
            ("researcher", "Ready when you are."),
            ("orchestrator", "Let's have the researcher find sources, the analyst verify them, and the"
             " writer produce the report draft."),
            ("researcher", "Standing by."),
            ("orchestrator", "The way forward: researcher gathers sources, analyst validates them,"
             " writer drafts the report."),
            ("researcher", "Still standing by."),
            ("orchestrator", "To proceed, the researcher collects sources, the analyst checks them and"
             " the writer writes the draft report."),
        ],
        [
            ("planner", "Step one is to reproduce the crash locally, step two is to bisect the recent"
             " commits, step three is to write a regression test."),
            ("planner", "First reproduce the crash on a local machine, then bisect recent commits,"
             " then add a regression test."),
            ("planner", "Plan of attack: get the crash to happen locally, bisect the latest commits,"
             " and cover it with a regression test."),
            ("planner", "I'll reproduce the crash locally, bisect through recent commits and finish"
             " with a regression test."),
        ],
        [
            ("planner", "First we audit the current vendors, then we collect new quotes, then we"
             " pick the cheapest reliable one."),
            ("planner", "The plan is to review our existing vendors, gather fresh quotes and choose"
             " the most affordable dependable option."),
            ("planner", "We'll go through the current suppliers, request new quotes, then select the"
             " cheapest one we can rely on."),
            ("planner", "Approach: audit vendors, get new quotes, and settle on the lowest-cost"
             " reliable supplier."),
        ],
        [
            ("lead", "Let's write the failing test first, then fix the parser, then update the"
             " docs."),
            ("helper", "Okay."),
            ("lead", "Start with a test that fails, next repair the parser, and finally refresh"
             " the documentation."),
            ("helper", "Sure."),
            ("lead", "The order is: failing test, parser fix, documentation update."),
            ("helper", "Understood."),
            ("lead", "We begin with a failing test, then correct the parser, then bring the docs"
             " up to date."),
        ],
    ],
    "repeated_request": [
        [
            ("support", "Could you send me your order number so I can look into this?"),
            ("customer", "My package never arrived."),
            ("support", "To check on this I'll need the order number from your confirmation email."),
            ("customer", "It was supposed to come last week."),
            ("support", "Can you share the order number? Without it I can't find the shipment."),
            ("customer", "I really need it."),
            ("support", "Please provide your order number and I will track the parcel for you."),
        ],
        [
            ("agent", "Please attach the error log from the failed build so I can diagnose it."),
            ("user", "The build is failing."),
            ("agent", "I need to see the build's error log. Could you paste it here?"),
            ("user", "It fails every time."),
            ("agent", "Without the log from the failing build I can't tell what broke. Can you share"
             " it?"),
            ("user", "Please fix it."),
            ("agent", "Could you send over the log output of the failed build?"),
        ],
        [
            ("assistant", "Which date would you like to book the meeting room for?"),
            ("user", "I need a room."),
            ("assistant", "For what day should I reserve the room?"),
            ("user", "A meeting room please."),
            ("assistant", "Let me know the date you want the meeting room."),
            ("user", "Any room is fine."),
            ("assistant", "What day do you need the room booked?"),
        ],
        [
            ("agent", "To reset your password I need the email address on the account."),
            ("user", "I can't log in."),
            ("agent", "What email address is your account registered under? I need it for the"
             " reset."),
            ("user", "Still locked out."),
            ("agent", "Please tell me the account's email so I can send the reset link."),
            ("user", "Help."),
            ("agent", "I can only reset it once I have the email address tied to your account."),
        ],
        [
            ("agent", "Which city are you flying from?"),
            ("user", "I want a cheap flight."),
            ("agent", "Where will you be departing from?"),
            ("user", "Something next month."),
            ("agent", "To search fares I need your departure city."),
            ("user", "Cheap is important."),
            ("agent", "From which city would you like to fly?"),
        ],
        [
            ("assistant", "Could you confirm the shipping address for the replacement?"),
            ("user", "The item arrived broken."),
            ("assistant", "Before I send the replacement, please confirm where it should be"
             " shipped."),
            ("user", "It was a gift."),
            ("assistant", "I need the delivery address for the new item. Can you confirm it?"),
            ("user", "I'm disappointed."),
            ("assistant", "Please let me know the address we should ship the replacement to."),
        ],
    ],
    "retried_search": [
        [
            ("researcher", "Searching the docs for how to configure the connection pool size."),
            ("researcher", "Looking through the documentation for the connection pool size setting."),
            ("researcher", "Let me search the docs again for where the pool size is configured."),
            ("researcher", "Trying another search of the documentation for connection pool"
             " configuration."),
        ],
        [
            ("researcher", "No results for papers on retrieval augmented generation evaluation; I'll"
             " search again."),
            ("researcher", "The search for RAG evaluation papers came back empty, retrying the"
             " query."),
            ("researcher", "Still nothing on evaluating retrieval augmented generation. Searching once"
             " more."),
            ("researcher", "Search returned no papers about RAG evaluation; trying again."),
        ],
        [
            ("agent", "Looking up the customer's address in the CRM."),
            ("agent", "Searching the CRM for this customer's address."),
            ("agent", "Let me look the customer address up in the CRM again."),
            ("agent", "Querying the CRM once more for the customer's address."),
        ],
        [
            ("searcher", "The web search for the company's annual revenue found nothing useful; I"
             " will try again."),
            ("searcher", "Nothing useful came up when searching for the company's yearly revenue."
             " Retrying."),
            ("searcher", "My search for annual revenue figures of the company was unproductive;"
             " searching again."),
            ("searcher", "Another attempt: searching the web for the company's annual revenue."),
        ],
        [
            ("researcher", "Looking for the official changelog entry about the deprecated login"
             " endpoint."),
            ("researcher", "Searching the changelog again for the notice about the login endpoint"
             " deprecation."),
            ("researcher", "Still trying to find where the changelog mentions the deprecated login"
             " endpoint."),
            ("researcher", "One more search of the changelog for the login endpoint deprecation"
             " note."),
        ],
        [
            ("agent", "Checking the knowledge base for the refund policy on digital goods."),
            ("agent", "Searching the knowledge base again for how refunds work on digital"
             " purchases."),
            ("agent", "Let me look up the digital goods refund policy in the knowledge base once"
             " more."),
            ("agent", "Another knowledge base query for the refund rules on digital products."),
        ],
    ],
    "negotiation_stalemate": [
        [
            ("buyer", "We can pay 40 dollars per unit, not a cent more."),
            ("seller", "Our price stays at 55 dollars per unit."),
            ("buyer", "Our ceiling is 40 dollars a unit; we cannot go higher."),
            ("seller", "We cannot go below 55 dollars per unit."),
            ("buyer", "40 dollars per unit is the most we are able to offer."),
            ("seller", "The unit price remains 55 dollars, that is final."),
            ("buyer", "We will not exceed 40 dollars for each unit."),
            ("seller", "55 dollars a unit is as low as we go."),
        ],
        [
            ("agent_a", "I propose the meeting happens on Tuesday morning."),
            ("agent_b", "Thursday afternoon works better for our team."),
            ("agent_a", "Tuesday morning would be best for us."),
            ("agent_b", "We would prefer Thursday afternoon."),
            ("agent_a", "Our preference remains a Tuesday morning slot."),
            ("agent_b", "Thursday in the afternoon is what suits us."),
            ("agent_a", "Let's do Tuesday morning, as I suggested."),
            ("agent_b", "Again, Thursday afternoon is our choice."),
        ],
        [
            ("landlord", "The rent increase of 8% is necessary to cover costs."),
            ("tenant", "An 8% increase is too much; I can accept 3%."),
            ("landlord", "I need the 8% increase to cover my expenses."),
            ("tenant", "3% is the most I can agree to, 8% is too high."),
            ("landlord", "Costs require a rent rise of 8%; I cannot lower it."),
            ("tenant", "I cannot accept more than 3%."),
            ("landlord", "The 8% rise has to stay to cover the costs."),
            ("tenant", "My position is unchanged: 3% at most."),
        ],
        [
            ("vendor", "Delivery in six weeks is the earliest we can commit to."),
            ("client", "We need delivery within four weeks."),
            ("vendor", "Six weeks is our earliest possible delivery."),
            ("client", "Four weeks is our hard requirement for delivery."),
            ("vendor", "We can't deliver sooner than six weeks."),
            ("client", "Delivery must happen within four weeks."),
            ("vendor", "The earliest date we can promise is six weeks out."),
            ("client", "Again, we require it within four weeks."),
        ],
        [
            ("employer", "The salary offer is fixed at the current level; we can't raise it."),
            ("candidate", "I need a higher salary to accept."),
            ("employer", "We are not able to increase the salary we offered."),
            ("candidate", "Without a raise in salary I can't take the job."),
            ("employer", "Our salary offer stays where it is."),
            ("candidate", "I still need more salary to say yes."),
            ("employer", "The offer cannot go up; the salary is final."),
            ("candidate", "My answer depends on a higher salary."),
        ],
        [
            ("team_a", "We want the shared service to keep the old API until the end of the"
             " quarter."),
            ("team_b", "We need to switch the shared service to the new API right away."),
            ("team_a", "The old API has to stay available for the rest of the quarter."),
            ("team_b", "Moving to the new API immediately is essential for us."),
            ("team_a", "Keeping the old API until the quarter ends is our requirement."),
            ("team_b", "We can't wait; the new API must be live now."),
            ("team_a", "We still need the old API through the end of the quarter."),
            ("team_b", "Our position hasn't changed: switch to the new API at once."),
        ],
    ],
    "resent_draft": [
        [
            ("writer", "Dear Ms. Lee, thank you for your interest in our platform. I would love to"
             " schedule a short call to show you how it saves time."),
            ("reviewer", "Please send the final version."),
            ("writer", "Dear Ms. Lee, thanks for your interest in our platform. I'd be glad to set"
             " up a brief call to show how it saves you time."),
            ("reviewer", "Send the final version please."),
            ("writer", "Dear Ms. Lee, thank you for being interested in our platform. Could we book"
             " a quick call so I can show you how it saves time?"),
            ("reviewer", "Final version?"),
            ("writer", "Dear Ms. Lee, many thanks for your interest in our platform. I'd like to"
             " arrange a short call to demonstrate the time it saves you."),
        ],
        [
            ("drafter", "Summary: the outage was caused by an expired certificate on the load"
             " balancer; it was renewed and traffic recovered."),
            ("drafter", "In summary, an expired load balancer certificate caused the outage;"
             " after renewal, traffic came back."),
            ("drafter", "Summary of the incident: the load balancer's certificate had expired,"
             " which caused the outage; renewing it restored traffic."),
            ("drafter", "The outage came from an expired certificate on the load balancer. It has"
             " been renewed and traffic has recovered."),
        ],
        [
            ("writer", "Tweet: Our new dashboard is live! Track every metric in one place."),
            ("writer", "Tweet: The new dashboard is now live - all your metrics in one place!"),
            ("writer", "Tweet: Now live: our new dashboard, with every metric in a single place."),
            ("writer", "Tweet: Say hello to our new dashboard, live today. Every metric, one"
             " place."),
        ],
        [
            ("assistant", "Subject: Invoice overdue. Hi Tom, a reminder that the invoice from last"
             " month is still unpaid. Please settle it at your earliest convenience."),
            ("assistant", "Subject: Overdue invoice. Hi Tom, just a reminder that last month's"
             " invoice remains unpaid; please pay it when you can."),
            ("assistant", "Subject: Invoice overdue. Hello Tom, this is a reminder that the invoice"
             " from last month has not been paid yet. Kindly settle it soon."),
            ("assistant", "Subject: Reminder, invoice overdue. Hi Tom, last month's invoice is still"
             " outstanding; please settle it at your convenience."),
        ],
        [
            ("writer", "Hi team, the office will be closed on Friday for maintenance. Please work"
             " from home that day."),
            ("writer", "Hello team, because of maintenance the office is closed on Friday; please"
             " plan to work remotely."),
            ("writer", "Hi all, maintenance means the office is shut on Friday, so please work from"
             " home."),
            ("writer", "Team, the office closes on Friday for maintenance work. Please work"
             " remotely that day."),
        ],
        [
            ("assistant", "Your subscription renews next week. If you want to cancel, you can do"
             " it from your account settings."),
            ("assistant", "Just a reminder that your subscription will renew next week; you can"
             " cancel in account settings."),
            ("assistant", "Your plan renews next week. To cancel, go to your account settings."),
            ("assistant", "Heads up: the subscription renews next week, and cancelling is possible"
             " in your account settings."),
        ],
    ],
}

LOOKALIKES: dict[str, list[Run]] = {
    "debug_rounds": [
        [
            ("coder", "Ran the test suite: 38 passed, 7 failed. Fixing the date parsing failures"
             " first."),
            ("coder", "Ran the test suite again: 42 passed, 3 failed. The remaining failures are in"
             " the auth module."),
            ("coder", "Test suite run: 44 passed, 1 failed. Only test_token_refresh still fails."),
            ("coder", "Ran the tests: 45 passed, 0 failed. All green."),
        ],
        [
            ("debugger", "Reproduced the memory leak: RSS grows by 120 MB per hour. Suspect the"
             " cache."),
            ("debugger", "Capped the cache; RSS now grows by 35 MB per hour. Something else still"
             " leaks."),
            ("debugger", "Closed the leaked cursors in the report job; RSS grows by 4 MB per hour"
             " now."),
            ("debugger", "After fixing the event listener leak, RSS stays flat at 310 MB over 6"
             " hours."),
        ],
        [
            ("coder", "Lint run: 23 errors, mostly unused imports in api/handlers.py."),
            ("coder", "Lint run: 9 errors left, now in models/user.py."),
            ("coder", "Lint run: 2 errors left, both in tests/test_billing.py."),
            ("coder", "Lint run: 0 errors. The codebase is clean."),
        ],
        [
            ("agent", "Benchmark: p95 latency is 840 ms; the N+1 query in /orders dominates."),
            ("agent", "Benchmark after batching the query: p95 latency is 410 ms; serialization is"
             " now the hot spot."),
            ("agent", "Benchmark after switching to orjson: p95 latency is 260 ms."),
            ("agent", "Benchmark with the connection pool raised to 20: p95 latency is 190 ms,"
             " under the 200 ms target."),
        ],
        [
            ("coder", "Type check: 17 errors, most of them in the payments client."),
            ("coder", "Type check: 6 errors remain after annotating the payments client; the rest are"
             " in the webhook handlers."),
            ("coder", "Type check: 1 error left, a missing return type in the retry helper."),
            ("coder", "Type check passes with 0 errors."),
        ],
        [
            ("debugger", "Flaky test investigation: the upload test failed 9 times in 50 runs."),
            ("debugger", "With the temp directory made unique per test, the upload test failed 3 times"
             " in 50 runs."),
            ("debugger", "After waiting for the file handle to close, it failed once in 50 runs."),
            ("debugger", "With the clock mocked as well, the upload test passed 200 runs in a row."),
        ],
    ],
    "plan_execution": [
        [
            ("planner", "Plan: 1) load the Q3 data, 2) clean it, 3) build the regional summary."
             " Starting step 1."),
            ("planner", "Step 1 done: loaded 12,400 rows of Q3 data. Starting step 2, cleaning."),
            ("planner", "Step 2 done: removed 312 duplicate rows and fixed 41 bad dates. Starting"
             " step 3."),
            ("planner", "Step 3 done: the regional summary covers 5 regions; EMEA leads with 38%"
             " of sales."),
        ],
        [
            ("planner", "Migration plan: schema change, email backfill, then read cutover. Applying"
             " the schema change now."),
            ("planner", "Schema change applied to users (migration 0042). Backfilling emails next."),
            ("planner", "Backfill complete: 1,893 missing emails filled from the CRM. Switching reads"
             " next."),
            ("planner", "Reads now go to users_v2; error rate 0.01% over the first hour."),
        ],
        [
            ("orchestrator", "Asking the researcher for sources on heat pump adoption in Germany."),
            ("orchestrator", "The researcher found 14 sources; sending them to the analyst to"
             " verify."),
            ("orchestrator", "The analyst verified 11 of the 14 sources and flagged 3 as outdated."
             " Handing the 11 to the writer."),
            ("orchestrator", "The writer produced a 1,200-word draft citing the 11 verified sources."
             " Sending it for review."),
        ],
        [
            ("planner", "Reproducing the crash: it happens on startup with config v3."),
            ("planner", "Bisecting: 64 commits between v1.8 and v1.9; the crash starts at commit"
             " a1b2c3d."),
            ("planner", "Commit a1b2c3d made config_loader.py read a missing key; fixed with a"
             " default value."),
            ("planner", "Added test_startup_without_key to the regression suite; it passes on the"
             " fix and fails on v1.9."),
        ],
        [
            ("planner", "Plan for the offsite: pick a venue, book travel, then send the agenda."),
            ("planner", "Venue booked: the Lakeside lodge for 30 people. Booking travel next."),
            ("planner", "Travel booked for 28 of the 30 attendees; 2 will drive. Writing the agenda"
             " now."),
            ("planner", "Agenda sent to all 30 attendees with the lodge address and the train times."),
        ],
        [
            ("orchestrator", "Starting the hiring pipeline: screen the applicants, schedule interviews,"
             " then collect feedback."),
            ("orchestrator", "Screening finished: 46 applicants, 9 moved to interviews."),
            ("orchestrator", "Interviews scheduled for the 9 candidates over the next two weeks."),
            ("orchestrator", "Feedback collected on all 9; 2 candidates advance to the final round."),
        ],
    ],
    "growing_draft": [
        [
            ("writer", "Draft: Our platform helps teams ship faster."),
            ("writer", "Draft: Our platform helps teams ship faster. It automates testing and"
             " deployment, so engineers spend their time on features instead of release chores."),
            ("writer", "Draft: Our platform helps teams ship faster. It automates testing and"
             " deployment, so engineers spend their time on features instead of release chores."
             " Customers report shorter release cycles, fewer rollbacks and calmer on-call weeks,"
             " and onboarding takes a single afternoon with guided setup and templates."),
            ("writer", "Draft: Our platform helps teams ship faster. It automates testing and"
             " deployment, so engineers spend their time on features instead of release chores."
             " Customers report shorter release cycles, fewer rollbacks and calmer on-call weeks,"
             " and onboarding takes a single afternoon with guided setup and templates. Pricing"
             " scales with usage, includes unlimited seats, priority support and a generous free"
             " tier for small teams and open source projects."),
        ],
        [
            ("drafter", "Incident summary: the outage was caused by an expired certificate."),
            ("drafter", "Incident summary: the outage was caused by an expired certificate on the"
             " load balancer. Monitoring did not alert because certificate expiry checks were"
             " disabled during the last migration."),
            ("drafter", "Incident summary: the outage was caused by an expired certificate on the"
             " load balancer. Monitoring did not alert because certificate expiry checks were"
             " disabled during the last migration. Impact: checkout failed for most customers"
             " until the certificate was renewed and traffic recovered."),
            ("drafter", "Incident summary: the outage was caused by an expired certificate on the"
             " load balancer. Monitoring did not alert because certificate expiry checks were"
             " disabled during the last migration. Impact: checkout failed for most customers"
             " until the certificate was renewed and traffic recovered. Follow-ups: re-enable"
             " expiry checks, automate renewal with the certificate manager, and add a runbook"
             " step for migrations that touch monitoring."),
        ],
        [
            ("writer", "Product description: a lightweight hiking backpack."),
            ("writer", "Product description: a lightweight hiking backpack with a ventilated back"
             " panel, padded hip belt and hydration sleeve for long summer trails."),
            ("writer", "Product description: a lightweight hiking backpack with a ventilated back"
             " panel, padded hip belt and hydration sleeve for long summer trails. Water resistant"
             " fabric, reflective details and compression straps keep gear dry, visible and stable"
             " on rough terrain."),
            ("writer", "Product description: a lightweight hiking backpack with a ventilated back"
             " panel, padded hip belt and hydration sleeve for long summer trails. Water resistant"
             " fabric, reflective details and compression straps keep gear dry, visible and stable"
             " on rough terrain. A detachable daypack, lifetime warranty and recycled materials"
             " make it a durable, responsible choice for weekend adventurers."),
        ],
        [
            ("assistant", "Meeting notes: discussed the roadmap."),
            ("assistant", "Meeting notes: discussed the roadmap. Agreed that search improvements come"
             " first, followed by the mobile redesign and billing cleanup."),
            ("assistant", "Meeting notes: discussed the roadmap. Agreed that search improvements come"
             " first, followed by the mobile redesign and billing cleanup. Owners: search goes to"
             " the platform team, mobile to design, billing to finance engineering."),
            ("assistant", "Meeting notes: discussed the roadmap. Agreed that search improvements come"
             " first, followed by the mobile redesign and billing cleanup. Owners: search goes to"
             " the platform team, mobile to design, billing to finance engineering. Risks: hiring"
             " delays, vendor contract renewal and unclear analytics requirements need follow-up"
             " meetings next sprint."),
        ],
        [
            ("writer", "Abstract: we study why agents repeat themselves."),
            ("writer", "Abstract: we study why agents repeat themselves. We collect conversation logs"
             " where agents repeat a request and label each repetition by its cause."),
            ("writer", "Abstract: we study why agents repeat themselves. We collect conversation logs"
             " where agents repeat a request and label each repetition by its cause. Most"
             " repetitions come from agents that never read the answer they asked for, and the"
             " rest from agents that lose the request after a handoff."),
            ("writer", "Abstract: we study why agents repeat themselves. We collect conversation logs"
             " where agents repeat a request and label each repetition by its cause. Most"
             " repetitions come from agents that never read the answer they asked for, and the"
             " rest from agents that lose the request after a handoff. A simple check that the"
             " answer was read before asking again removes most repeated requests in our logs."),
        ],
        [
            ("assistant", "Trip itinerary: fly out on the first morning."),
            ("assistant", "Trip itinerary: fly out on the first morning. Check into the hotel near the"
             " old town and walk the harbour in the evening."),
            ("assistant", "Trip itinerary: fly out on the first morning. Check into the hotel near the"
             " old town and walk the harbour in the evening. The second day is a boat tour of the"
             " islands with lunch at a fishing village."),
            ("assistant", "Trip itinerary: fly out on the first morning. Check into the hotel near the"
             " old town and walk the harbour in the evening. The second day is a boat tour of the"
             " islands with lunch at a fishing village. On the last day, visit the market, pack,"
             " and take the evening train back to the airport for the flight home."),
        ],
    ],
    "region_rollout": [
        [
            ("deployer", "Deployed v2.4 to eu-west-1; canary healthy, error rate 0.02%."),
            ("deployer", "Deployed v2.4 to us-east-1; canary healthy, error rate 0.03%."),
            ("deployer", "Deployed v2.4 to ap-southeast-2; canary healthy, error rate 0.02%."),
            ("deployer", "Deployed v2.4 to sa-east-1; canary healthy. Rollout complete in 4 of 4"
             " regions."),
        ],
        [
            ("ops", "Rolling out the config change to the Frankfurt cluster; all pods restarted"
             " cleanly."),
            ("ops", "Rolling out the config change to the Virginia cluster; all pods restarted"
             " cleanly."),
            ("ops", "Rolling out the config change to the Singapore cluster; all pods restarted"
             " cleanly."),
            ("ops", "Rolling out the config change to the Sydney cluster; all pods restarted"
             " cleanly. Every cluster is done."),
        ],
        [
            ("deployer", "Migrated tenant group A (120 tenants) to the new database; no errors."),
            ("deployer", "Migrated tenant group B (95 tenants) to the new database; no errors."),
            ("deployer", "Migrated tenant group C (210 tenants) to the new database; 2 retried,"
             " no errors."),
            ("deployer", "Migrated tenant group D (60 tenants) to the new database; no errors. All"
             " 485 tenants migrated."),
        ],
        [
            ("agent", "Enabled the feature flag for 5% of users in Canada; conversion steady."),
            ("agent", "Enabled the feature flag for 25% of users in Canada; conversion steady."),
            ("agent", "Enabled the feature flag for 50% of users in Canada and Mexico; conversion up"
             " 1.2%."),
            ("agent", "Enabled the feature flag for 100% of users in North America; conversion up"
             " 1.4%."),
        ],
        [
            ("translator", "Translated the onboarding guide into French; the glossary terms are"
             " consistent."),
            ("translator", "Translated the onboarding guide into German; the glossary terms are"
             " consistent."),
            ("translator", "Translated the onboarding guide into Spanish; the glossary terms are"
             " consistent."),
            ("translator", "Translated the onboarding guide into Japanese; the glossary terms are"
             " consistent. All planned languages are done."),
        ],
        [
            ("ops", "Patched the kernel on web-01 and rebooted; health checks green."),
            ("ops", "Patched the kernel on web-02 and rebooted; health checks green."),
            ("ops", "Patched the kernel on web-03 and rebooted; health checks green."),
            ("ops", "Patched the kernel on db-01 during the maintenance window; replication caught up"
             " and health checks are green."),
        ],
    ],
    "plain_progress": [
        [
            ("writer", "Finished the introduction of the report. Starting on the methods section now."),
            ("writer", "The methods section is written. Moving on to the results next."),
            ("writer", "Results are drafted with their charts. Writing the discussion now."),
            ("writer", "The discussion is done, so the whole report is ready for review."),
        ],
        [
            ("coder", "Reproduced the bug where saving a profile clears the avatar."),
            ("coder", "Found the cause: the form sends an empty avatar field, and the server"
             " treats it as a removal."),
            ("coder", "Fixed it by ignoring empty avatar fields on the server and added a test for"
             " it."),
            ("coder", "The fix is merged and the profile page keeps the avatar after saving."),
        ],
        [
            ("support", "Could you tell me which browser you are using when the page fails to load?"),
            ("support", "Thanks. Since it fails in the browser you use, please try clearing the cache"
             " and reloading the page."),
            ("support", "Good to hear the cache was the culprit. I have also flagged the stale asset"
             " to our web team so it does not happen again."),
            ("support", "Our web team has deployed a fix for the stale asset, so you should not need"
             " to clear the cache again."),
        ],
        [
            ("researcher", "Searching for studies on remote work and productivity."),
            ("researcher", "Found several surveys on remote work; most measure productivity by"
             " self-report."),
            ("researcher", "Narrowed the search to studies that measure output directly rather than"
             " by self-report."),
            ("researcher", "The direct-measurement studies show small gains for focused tasks and"
             " losses for collaborative ones. Summarising them now."),
        ],
        [
            ("planner", "We need a venue for the workshop before we can send invitations."),
            ("planner", "The venue is confirmed, so the invitations can go out today."),
            ("planner", "Invitations went out this morning; now arranging catering for the guests."),
            ("planner", "Catering is arranged and the workshop is fully organised."),
        ],
        [
            ("analyst", "Loading the customer survey responses into the notebook."),
            ("analyst", "The responses are loaded; cleaning out blank and duplicate answers."),
            ("analyst", "Cleaning is done. Grouping the answers by theme reveals pricing as the main"
             " complaint."),
            ("analyst", "Pricing complaints come mostly from small businesses; writing up that"
             " recommendation for the product team."),
        ],
    ],
}



def dev(runs: list[Run]) -> list[Run]:
    """The development split: the even instances (thresholds are tuned on these only)."""
    return runs[0::2]


def test(runs: list[Run]) -> list[Run]:
    """The test split: the odd instances (reported)."""
    return runs[1::2]
