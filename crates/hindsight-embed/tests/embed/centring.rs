//! The reference scale of `CentredEmbedder` is the default model's own: its mean vector over the
//! probe corpus has the squared length the constant says.

use hindsight_embed::{Centre, UseM3Embedder, REFERENCE_BASELINE};

use crate::common;

#[test]
fn the_reference_baseline_is_the_default_models_mean_over_the_probe() {
    let model = UseM3Embedder::load(&common::model_dir()).unwrap();
    let baseline = Centre::measure(&model).unwrap().baseline();
    assert!(
        (baseline - REFERENCE_BASELINE).abs() < 0.005,
        "USE-multilingual v3 gives unrelated probe texts a mean cosine of {baseline}, \
         the constant says {REFERENCE_BASELINE}"
    );
}
