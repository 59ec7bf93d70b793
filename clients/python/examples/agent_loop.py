"""An agent that recalls before it acts and writes down what it learns.

Start a node first (`hindsight serve`), then: python examples/agent_loop.py
"""
from hindsight_client import HindsightClient

BANK = "demo/travel-agent"
TASKS = [  # (what the user asks, what the user tells us along the way)
    ("Book me a flight to Lisbon", "I always want a window seat."),
    ("Book me a flight to Oslo", "I only fly with carbon-offset tickets."),
    ("Book me a flight to Rome", None),
]

with HindsightClient() as hs:
    if BANK not in [info.name for info in hs.banks.list()]:
        hs.banks.create(BANK, description="what the travel agent knows about its user")
    for task, said in TASKS:
        known = hs.recall(BANK, task, top_k=5)
        facts = [hit.memory.content for hit in known]
        print(f"{task}: acting on {facts or 'nothing yet'}")  # the model call goes here
        for hit in known:  # tell the node which memories were used, so they gain confidence
            hs.feedback(known.recall_id, hit.memory.id, "used")
        if said:
            hs.write(BANK, said, source="user", kind="semantic", subtype="preference")
