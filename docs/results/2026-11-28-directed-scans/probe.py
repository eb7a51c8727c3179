p='crates/evendb/src/funk/log/segment/directed.rs'
s=open(p).read()
s=s.replace('''impl Directed {''','''pub static PROBE: [std::sync::atomic::AtomicU64; 8] = [const { std::sync::atomic::AtomicU64::new(0) }; 8];
fn probe(i: usize, n: u64) {
    let v = PROBE[i].fetch_add(n, Ordering::Relaxed);
    if i == 0 && v % 1000 == 0 {
        let g: Vec<u64> = PROBE.iter().map(|x| x.load(Ordering::Relaxed)).collect();
        eprintln!("XDIR scans {} groups {} recs {} fallback {} done {} cands {} idxbuild {} versioned {}", g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]);
    }
}
pub fn probe_pub(i: usize, n: u64) { probe(i, n) }

impl Directed {''')
s=s.replace('''        let candidates: Vec<(u32, u64)> = selected.into_iter().map(|(p, loc, _)| (p, loc)).collect();''','''        let candidates: Vec<(u32, u64)> = selected.into_iter().map(|(p, loc, _)| (p, loc)).collect();
        probe(5, candidates.len() as u64);
        probe(0, 1);''')
s=s.replace('''        if head.len() > MAX_VERSIONS_PER_KEY * keys.len() {
            return None;''','''        if head.len() > MAX_VERSIONS_PER_KEY * keys.len() {
            probe(6, 0); PROBE[7].fetch_add(1, Ordering::Relaxed);
            return None;''')
s=s.replace('''        if self.next >= n {
            return Ok(Group::Done);
        }''','''        if self.next >= n {
            probe(4, 1);
            return Ok(Group::Done);
        }''')
s=s.replace('''        if size > LARGE_GROUP || self.read + size > self.limit {
            return Ok(Group::Index);
        }''','''        if size > LARGE_GROUP || self.read + size > self.limit {
            probe(3, 1);
            return Ok(Group::Index);
        }
        probe(1, 1);
        probe(2, size as u64);''')
open(p,'w').write(s)
p='crates/evendb/src/funk/log/segment/sorted.rs'
s=open(p).read()
s=s.replace('''        let new = Arc::new(self.extend_index(old, from, len)?);''','''        let new = Arc::new(self.extend_index(old, from, len)?);
        super::directed::probe_pub(6, 1);''')
open(p,'w').write(s)
