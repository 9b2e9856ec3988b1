//! Unit tests of the benchmark bundle generator.

use super::*;

#[test]
fn hrefs_are_relative_and_percent_encoded() {
    assert_eq!(href("pages/a", "pages/a/b.md"), "b.md");
    assert_eq!(href("pages/a/x", "pages/b/c d.md"), "../../b/c%20d.md");
    assert_eq!(
        href("", "pages/指南/安装 (基础).md"),
        "pages/%E6%8C%87%E5%8D%97/%E5%AE%89%E8%A3%85%20%28%E5%9F%BA%E7%A1%80%29.md"
    );
    assert_eq!(
        href("_index/pages/en/openapi", "_index/index.md"),
        "../../../index.md"
    );
    assert_eq!(href("pages", "pages/index.md"), "index.md");
}
