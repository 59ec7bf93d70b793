// Type-checked only (tsc -p test/types): the README's example must compile against the built
// declarations, and what the node would refuse must not.

import {
  HindsightClient,
  InvalidArgument,
  NotFound,
  RateLimited,
  type RecallHit,
  type RecallResult,
  type WriteRequest,
} from "../../dist/index.js";

export async function example(): Promise<void> {
  const hs = new HindsightClient({ baseUrl: "http://127.0.0.1:7401", apiKey: process.env.HINDSIGHT_API_KEY ?? "" });

  const w = await hs.write("acme/agent-7", { content: "The user prefers answers in French.", provenance: { source: "user" } });
  console.log(w.id, w.disposition, w.merged_into);

  const result: RecallResult = await hs.recall("acme/agent-7", { query: "Which language should I answer in?", top_k: 5 });
  for (const hit of result.hits) {
    const content: string = hit.memory.content;
    const arms: string[] = hit.explain.arms.map((a) => a.arm);
    console.log(hit.score.toFixed(2), content, hit.status.name, arms, hit.explain.flags);
  }
  const top: RecallHit | undefined = result.hits[0];
  if (top) await hs.feedback({ recall_id: result.recall_id, memory_id: top.memory.id, outcome: "helpful" });

  try {
    await hs.get("01M8YE12SMHKP96BBWHX8RHQSJ");
  } catch (error) {
    if (error instanceof NotFound) console.log(error.status, error.code, error.message);
    else if (error instanceof RateLimited) console.log(error.retryAfter);
    else if (error instanceof InvalidArgument) console.log(error.message);
  }
}

export function refused(hs: HindsightClient): void {
  // @ts-expect-error: not a field of WriteRequest (the node refuses unknown fields)
  const unknown: WriteRequest = { content: "x", colour: "blue" };
  // @ts-expect-error: top_k is a number
  void hs.recall("acme/agent-7", { query: "q", top_k: "3" });
  // @ts-expect-error: the field names are the proto's snake_case ones
  void hs.recall("acme/agent-7", { query: "q", topK: 3 });
  // @ts-expect-error: a recall's time window may be null
  const from: string = ({} as RecallResult).time_window.from;
  void unknown;
  void from;
}
