//! Memories that merely mention passwords, deletion, transfers or encodings: kept and recalled.

use crate::common::*;

#[test]
fn everyday_memories_on_sensitive_topics_stay_clean() {
    assert_all_clean(&[
        "The user reset their password yesterday.",
        "Deleted the old staging bucket after the migration.",
        "Transfer of 200 EUR to the landlord is due on the 1st.",
        "Two-factor is enabled on the admin account.",
        "The user asked how base64 encoding works.",
        "My password manager suggested a 20-character passphrase.",
        "Remove the old backups from the NAS after the new disk arrives.",
        "Paid the plumber 150 dollars by bank transfer.",
        "The assistant summarised the contract in three bullet points.",
        "The user prefers answers without emojis.",
        "Sent the slides to Maria on Tuesday.",
        "The API returns the token in the Authorization header.",
        "Approval for the offsite budget came from Lena this morning.",
        "Please decode the error code 0x80070005 for me next time it appears.",
        "The photo of the receipt is saved as receipt_2024_03.png.",
        "用户昨天重置了密码。",
        "迁移完成后删除了旧的测试数据库。",
        "每月一号给房东转账两千元。",
        "管理员账户已开启双重验证。",
        "用户问了base64编码是怎么回事。",
    ]);
}
