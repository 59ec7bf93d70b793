use std::io::BufRead;
fn main() {
    let lines: Vec<String> = std::io::stdin().lock().lines().map(|l| l.unwrap()).collect();
    let t = std::time::Instant::now();
    hindsight_text::warm_up();
    eprintln!("warm_up {:?}", t.elapsed());
    let as_of = chrono::Utc::now();
    for (name, f) in [
        ("terms", &(|l: &str| { hindsight_text::Analyzer::shared().terms(l).len(); }) as &dyn Fn(&str)),
        ("entities", &|l: &str| { hindsight_text::extract_entities(l); }),
        ("time", &|l: &str| { hindsight_text::parse_time_window(l, as_of); }),
        ("slot", &|l: &str| { hindsight_text::extract_slot(l); }),
        ("cues", &|l: &str| { hindsight_text::find_cues(l); }),
        ("tokens", &|l: &str| { hindsight_text::count_tokens(l); }),
    ] {
        let t = std::time::Instant::now();
        for l in &lines { f(l); }
        eprintln!("{name}: {:?} per text", t.elapsed() / lines.len() as u32);
    }
}
