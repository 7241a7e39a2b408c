use super::*;


#[test]
fn interning_is_structural() {
    let mut c = Context::new();
    let s = c.shard_id(2).unwrap();
    let a = c.aff_expr(&[(s, 1)], 0).unwrap();
    let b = c.aff_expr(&[(s, 1)], 0).unwrap();
    assert_eq!(a, b);
}
