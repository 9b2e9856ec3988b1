//! Unit tests of the generated bundle's records.

use super::*;

#[test]
fn packing_splits_at_the_byte_cap_and_numbers_parts() {
    let big = "x".repeat(SHARD_BYTES / 3);
    let records: Vec<(String, String)> = (0..4)
        .map(|i| (format!("k{i}"), format!("\"{big}\"")))
        .collect();
    let (files, parts) = pack("d", "s-documents", "[", &records, false);
    assert_eq!(files.len(), 2);
    assert_eq!(parts[0].path, "d/s-documents-part-0001.json");
    assert_eq!(parts[1].first_key, "k2");
    assert!(files.iter().all(|(_, b)| b.len() <= SHARD_BYTES));
    assert_eq!(parts[0].byte_count, files[0].1.len());
}
